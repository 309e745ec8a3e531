package delivery

import (
	"testing"

	"github.com/heraldhq/herald/internal/attempt"
)

// What Reserve grants, step by step, as claims come back and reservations
// are refused: a firing may hand a log over only when the process has
// looked (a claim came back short) and knows of nothing older of the
// webhook, or of its account, waiting in the queue.
func TestReserveWaitsBehindWhatMayBeQueued(t *testing.T) {
	d := New(nil, Config{Concurrency: 64, PerWebhook: 2})
	d.producer.startHanding(&handing{})
	claimOf := func(hook, account string, n int) []attempt.Claim {
		var cs []attempt.Claim
		for range n {
			cs = append(cs, attempt.Claim{WebhookID: hook, AccountID: account})
		}
		return cs
	}
	// note records a claim of limit logs, with room for "w" of wRoom and for
	// account "a" of aRoom, that took got.
	note := func(limit, wRoom, aRoom int, exclude []string, got ...attempt.Claim) {
		d.slots.mu.Lock()
		defer d.slots.mu.Unlock()
		d.producer.noteClaim(attempt.ClaimParams{Limit: limit, PerWebhook: 2, Room: map[string]int{"w": wRoom}, Exclude: exclude,
			PerAccount: 8, AccountRoom: map[string]int{"a": aRoom}}, got)
	}
	// free gives back n reservations of "w" (their firing rolled back).
	free := func(n int) { d.Abandon(claimOf("w", "a", n), false) }
	step := func(what string, want bool) {
		t.Helper()
		if got := d.Reserve("a", "w"); got != want {
			t.Fatalf("%s: Reserve = %v; want %v", what, got, want)
		}
		if want {
			free(1)
		}
	}

	step("before any claim (a backlog may wait)", false) // its log waits: 1
	note(8, 4, 8, nil)
	step("the first claim came back short", true)
	note(2, 4, 8, nil, claimOf("x", "b", 2)...)
	step("a claim that took all it asked for, of another webhook", true)

	// The webhook's room full: refused, and its log waits in the queue;
	// with room again, still refused until claims take what waits.
	for range 4 {
		if !d.Reserve("a", "w") {
			t.Fatal("refused within the webhook's room")
		}
	}
	step("no room", false) // waiting: 1
	free(4)
	step("room, but a log of the webhook waits", false) // 2
	note(8, 4, 8, []string{"w"})
	step("a claim that passed the webhook over", false) // 3
	note(2, 4, 8, nil, claimOf("w", "a", 2)...)
	step("a full claim that took some of what waits", false) // 1 + 1
	note(2, 4, 8, nil, claimOf("w", "a", 2)...)
	step("a claim that took as many as waited", true)

	// Drained by a short claim, whatever the count: it took all that was
	// due of the webhook, unless the webhook's or its account's room
	// stopped it.
	step("before", true)
	d.slots.mu.Lock()
	d.producer.wait("w", "a") // as record does for a released attempt
	d.producer.wait("w", "a")
	d.slots.mu.Unlock()
	step("released attempts wait", false) // 3
	note(8, 1, 8, nil, claimOf("w", "a", 1)...)
	step("a claim that took as many as the webhook's room", false) // 2 + 1
	note(8, 4, 1, nil, claimOf("v", "a", 1)...)
	step("a claim that took as many as the account's room", false) // 3 + 1
	note(8, 4, 8, nil, claimOf("w", "a", 1)...)
	step("a short claim that took less than both", true)

	d.producer.stopHanding()
	step("stopped", false)
}
