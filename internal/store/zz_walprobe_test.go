package store_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
)

func TestWALProbe(t *testing.T) {
	if os.Getenv("WALPROBE") == "" {
		t.Skip()
	}
	url := heraldtest.PostgresURL(t)
	ctx := context.Background()
	key := make([]byte, 32)
	rand.Read(key)
	st, err := store.Open(ctx, url, store.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acct, _ := st.CreateAccount(ctx, store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: "x"})
	hooks := 1
	if os.Getenv("WALPROBE") == "fan" {
		hooks = 10
	}
	var hookIDs []string
	for i := 0; i < hooks; i++ {
		h, err := st.CreateWebhook(ctx, acct.ID, store.NewWebhook{Name: "h", URL: "https://example.com/h",
			Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_review_token_0123456789abcd"})
		if err != nil {
			t.Fatal(err)
		}
		hookIDs = append(hookIDs, h.ID)
	}
	raw, _ := sql.Open("pgx", strings.Replace(url, "pool_max_conns=8&", "", 1))
	defer raw.Close()
	lsn := func() int64 {
		var n int64
		raw.QueryRow(`SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn`).Scan(&n)
		return n
	}
	var per []float64
	for trial := 0; trial < 40; trial++ {
		a := lsn()
		st.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.Fire(ctx, acct.ID, event.LicenseCreated, map[string]any{"id": "lic", "key": "ABCD-EFGH-IJKL-MNOP"})
			return err
		})
		now := time.Now()
		cs, err := st.Claim(ctx, store.ClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Lease: store.NewID(), Limit: 100, PerWebhook: 100})
		if err != nil || len(cs) != hooks {
			t.Fatal(len(cs), err)
		}
		code := 200
		var outs []store.Outcome
		for _, c := range cs {
			outs = append(outs, store.Outcome{LogID: c.LogID, WebhookID: c.WebhookID, Lease: c.Lease, Trigger: store.TriggerAutomatic,
				Result: store.Delivered, Attempt: &store.AttemptRecord{SentAt: now, ReceivedAt: &now, StatusCode: &code, Duration: time.Millisecond, ResponseBody: []byte("ok")}})
		}
		if _, err := st.Complete(ctx, outs, 50); err != nil {
			t.Fatal(err)
		}
		per = append(per, float64(lsn()-a)/float64(hooks))
	}
	slices.Sort(per)
	t.Logf("WAL bytes per delivery (%d webhooks): min %.0f, p25 %.0f, median %.0f", hooks, per[0], per[len(per)/4], per[len(per)/2])
}
