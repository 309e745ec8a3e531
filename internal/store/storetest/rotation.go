package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// testTokenRotation: a rotation keeps the old token on webhook-signature and
// adds the next one until its end (by the store's clock, or finished early),
// then signs with the next token alone and erases the old one; claims and
// resends carry the tokens of their own moment; a second rotation, a finish
// without one and another account's ids change nothing.
func testTokenRotation(t *testing.T, b *Bundle) {
	other := b.NewAccount(t, "b@example.com")
	w := b.Webhook(t, "rot")
	old := "whsec_rot_0123456789"
	const next = "whsec_next_0123456789"
	start := b.Clock.Now()

	if _, err := b.St.RotateWebhookToken(b.Ctx, other.ID, w.ID, "whsec_x_0123456789", time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("rotate another account's webhook: %v; want ErrNotFound", err)
	}
	got, err := b.St.RotateWebhookToken(b.Ctx, b.Account.ID, w.ID, next, time.Hour)
	if err != nil {
		t.Fatalf("rotate: %v", err)
	}
	want := store.TokenRotation{StartedAt: start, EndsAt: start.Add(time.Hour)}
	if got.Rotation == nil || !got.Rotation.StartedAt.Equal(want.StartedAt) || !got.Rotation.EndsAt.Equal(want.EndsAt) {
		t.Fatalf("rotation after rotate: %+v; want %+v", got.Rotation, want)
	}
	b.wantTokens(t, w.ID, old, next)
	if _, err := b.St.RotateWebhookToken(b.Ctx, b.Account.ID, w.ID, "whsec_third_0123456789", time.Minute); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a second rotation: %v; want ErrConflict", err)
	}
	b.wantTokens(t, w.ID, old, next)
	if _, err := b.St.FinishTokenRotation(b.Ctx, other.ID, w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("finish another account's rotation: %v; want ErrNotFound", err)
	}
	if _, err := b.St.WebhookTokens(b.Ctx, other.ID, w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account's tokens: %v; want ErrNotFound", err)
	}

	// A delivery claimed, and a resend begun, during the overlap carry both.
	ids := b.Fire(t, b.St, 2)
	claims := b.Claim(t, b.St, 0, time.Minute, 1, 1)
	if len(claims) != 1 || claims[0].Token != old || claims[0].NextToken != next {
		t.Fatalf("claims during the overlap: %+v; want one signed with the old token and the next", claims)
	}
	logs := b.logs(t, store.LogFilter{EventID: ids[1]})
	if len(logs) != 1 {
		t.Fatalf("logs of the second event: %d; want 1", len(logs))
	}
	resend, err := b.Q.BeginResend(b.Ctx, b.Account.ID, logs[0].ID, b.Clock.Now().Add(time.Minute))
	if err != nil || resend.Token != old || resend.NextToken != next {
		t.Fatalf("resend during the overlap: tokens %q, %q, %v; want %q, %q", resend.Token, resend.NextToken, err, old, next)
	}
	if err := b.Q.EndResend(b.Ctx, logs[0].ID); err != nil {
		t.Fatal(err)
	}

	// At its end the next token signs alone, before the sweep has run.
	b.Clock.Add(time.Hour - time.Millisecond)
	b.wantTokens(t, w.ID, old, next)
	b.Clock.Add(time.Millisecond)
	b.wantTokens(t, w.ID, next, "")
	if v, _ := b.St.Webhook(b.Ctx, b.Account.ID, w.ID); v.Rotation != nil {
		t.Errorf("rotation at its end: %+v; want none", v.Rotation)
	}
	resend, err = b.Q.BeginResend(b.Ctx, b.Account.ID, logs[0].ID, b.Clock.Now().Add(time.Minute))
	if err != nil || resend.Token != next || resend.NextToken != "" {
		t.Fatalf("resend after the end: tokens %q, %q, %v; want %q alone", resend.Token, resend.NextToken, err, next)
	}
	if err := b.Q.EndResend(b.Ctx, logs[0].ID); err != nil {
		t.Fatal(err)
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM webhooks WHERE id = ? AND next_token_sealed IS NOT NULL`, w.ID); n != 1 {
		t.Fatalf("before the sweep: %d rows with two tokens; want 1", n)
	}
	if n, err := b.St.EndTokenRotations(b.Ctx); err != nil || n != 1 {
		t.Errorf("sweep: ended %d, %v; want 1", n, err)
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM webhooks WHERE id = ? AND next_token_sealed IS NULL AND rotation_ends_at IS NULL`, w.ID); n != 1 {
		t.Errorf("after the sweep: the old token is kept; want it erased")
	}
	b.wantTokens(t, w.ID, next, "")
	if _, err := b.St.FinishTokenRotation(b.Ctx, b.Account.ID, w.ID); !errors.Is(err, store.ErrConflict) {
		t.Errorf("finish with no rotation: %v; want ErrConflict", err)
	}

	// Finished early: the switch is immediate.
	const third = "whsec_third_0123456789"
	if _, err := b.St.RotateWebhookToken(b.Ctx, b.Account.ID, w.ID, third, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	done, err := b.St.FinishTokenRotation(b.Ctx, b.Account.ID, w.ID)
	if err != nil || done.Rotation != nil {
		t.Fatalf("finish: rotation %+v, %v; want none", done.Rotation, err)
	}
	b.wantTokens(t, w.ID, third, "")
	if n, err := b.St.EndTokenRotations(b.Ctx); err != nil || n != 0 {
		t.Errorf("sweep after a finish: ended %d, %v; want 0", n, err)
	}

	// A rotation whose end came but was not swept: a new rotation starts
	// from the token that signs now.
	const fourth, fifth = "whsec_fourth_0123456789", "whsec_fifth_0123456789"
	if _, err := b.St.RotateWebhookToken(b.Ctx, b.Account.ID, w.ID, fourth, time.Minute); err != nil {
		t.Fatal(err)
	}
	b.Clock.Add(time.Minute)
	if _, err := b.St.RotateWebhookToken(b.Ctx, b.Account.ID, w.ID, fifth, time.Minute); err != nil {
		t.Fatalf("rotate after an unswept end: %v", err)
	}
	b.wantTokens(t, w.ID, fourth, fifth)

	// A token set outright replaces the one that signs and ends the rotation.
	const set = "whsec_set_0123456789"
	patched, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{Token: ptr(set)})
	if err != nil || patched.Rotation != nil {
		t.Fatalf("patch the token: rotation %+v, %v; want none", patched.Rotation, err)
	}
	b.wantTokens(t, w.ID, set, "")
	name := "renamed"
	if _, err := b.St.RotateWebhookToken(b.Ctx, b.Account.ID, w.ID, fifth, time.Minute); err != nil {
		t.Fatal(err)
	}
	if renamed, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{Name: &name}); err != nil || renamed.Rotation == nil {
		t.Errorf("patch without a token: rotation %+v, %v; want it kept", renamed.Rotation, err)
	}
	b.wantTokens(t, w.ID, set, fifth)
}

func ptr[T any](v T) *T { return &v }

// wantTokens checks the tokens that sign a webhook's deliveries now.
func (b *Bundle) wantTokens(t testing.TB, webhookID, current, next string) {
	t.Helper()
	got, err := b.St.WebhookTokens(b.Ctx, b.Account.ID, webhookID)
	if err != nil || got.Current != current || got.Next != next {
		t.Fatalf("tokens: %+v, %v; want current %q, next %q", got, err, current, next)
	}
	if tok, err := b.St.WebhookToken(b.Ctx, b.Account.ID, webhookID); err != nil || tok != current {
		t.Fatalf("token: %q, %v; want %q", tok, err, current)
	}
}
