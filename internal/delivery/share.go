package delivery

import (
	"errors"
	"time"
)

// How much of the process each webhook may hold.
//
// Concurrency bounds the attempts in flight or unrecorded in this process;
// the rule below keeps a slow or dead receiver from taking them all:
//
//   - A webhook earns its requests in flight: it starts at startLimit, gets
//     one more for each answer that comes promptly, up to PerWebhook, and
//     loses half of them for each answer that comes slowly or not at all. A
//     receiver that never answers is soon down to one request at a time.
//   - No webhook holds more than a fair share of its account's share:
//     that share/(the account's webhooks holding slots + 1), so a webhook
//     with due work that holds none always finds a share free, and one
//     account's many webhooks do not shrink another account's webhooks'
//     shares.
//   - Webhooks whose latest answer was slow hold at most half of the process
//     together, however many there are.
//   - Above the webhooks, accounts: the webhooks of one account together hold
//     at most the account's share (accountShare), so one account's many
//     webhooks cannot take the process from another account's one; an
//     account alone may hold all but an eighth, kept for an account that
//     holds nothing yet. The claim passes the rest of each account's share
//     as its room, and takes first attempts before retries, account by
//     account (attempt.ClaimParams).
//   - A claim takes no more of a webhook than its room: twice its limit
//     (less what it holds, not counting attempts made whose outcomes wait
//     to be recorded), so
//     that a second round is claimed while the first is in flight and a fast
//     receiver does not wait for claims; only its limit for a slow webhook,
//     whose logs would otherwise wait inside the process for a slot. A
//     webhook is claimed for again only once a quarter of its room is free,
//     so claims stay batches rather than one log per answer.
//   - A throttled webhook (its rateLimit) holds at most what it sends in
//     throttleWindow (throttle.go).
//   - Test and Resend take the same slots as automatic attempts; when none
//     frees within manualWait they are refused (ErrBusy, a 429) rather than
//     open more connections to the receiver.
const (
	startLimit  = 4
	manualWait  = 5 * time.Second
	forgetAfter = 10 * time.Minute // a slow webhook's standing is kept this long after its last answer
)

// ErrBusy refuses a Test or Resend while the webhook already has as many
// requests in flight as it may.
var ErrBusy = errors.New("the webhook already has as many requests in flight as it may take; try again shortly")

// hookState is one webhook's standing in this process.
type hookState struct {
	account string // the webhook's account, once a claim or a manual send named it
	held    int    // automatic logs claimed here and not yet recorded
	// recording is how many of held were attempted and wait only for their
	// outcomes to be recorded. They count against the process (a crash
	// would send them again) but not against the webhook's room: what the
	// receiver sees is requests in flight, and a claim that waited for the
	// database to record the previous round would hold the webhook to one
	// round per commit.
	recording int
	manual    int           // Tests and Resends in flight or waiting for a slot
	rate      int           // its rate limit, deliveries per second (0: none), as its latest claim said
	sending   int           // requests in flight, automatic and manual
	limit     int           // requests in flight it has earned
	slow      bool          // its latest answer was slow or never came
	seen      time.Time     // when its latest request ended
	wake      chan struct{} // closed, and replaced, when a slot frees or limit grows
}

// hook returns id's standing, new if it has none; account, when not "",
// names the webhook's account. d.mu is held.
func (d *Dispatcher) hook(id, account string) *hookState {
	st := d.hooks[id]
	if st == nil {
		st = &hookState{limit: min(startLimit, d.cfg.PerWebhook), wake: make(chan struct{})}
		d.hooks[id] = st
	}
	if st.account == "" && account != "" {
		st.account = account
		if n := st.held + st.manual; n > 0 {
			d.holdAccount(account, n, 1)
		}
	}
	return st
}

// accountState is what one account's webhooks hold here.
type accountState struct {
	held  int // slots, automatic and manual
	hooks int // webhooks holding any
}

// holdAccount changes what an account's webhooks hold (n slots, hooks
// webhooks holding any), keeping count of the accounts that hold any. d.mu
// is held.
func (d *Dispatcher) holdAccount(account string, n, hooks int) {
	if account == "" || (n == 0 && hooks == 0) {
		return
	}
	a := d.accounts[account]
	if a == nil {
		a = &accountState{}
		d.accounts[account] = a
		d.accountsActive++
	}
	a.held += n
	a.hooks += hooks
	if a.held <= 0 {
		delete(d.accounts, account)
		d.accountsActive--
	}
}

// heldBy is what an account's webhooks hold here. d.mu is held.
func (d *Dispatcher) heldBy(account string) int {
	if a := d.accounts[account]; a != nil {
		return a.held
	}
	return 0
}

// forget drops a standing nobody needs: nothing held or waiting, and
// nothing slow to remember. d.mu is held.
func (d *Dispatcher) forget(id string, st *hookState, now time.Time) {
	if st.held == 0 && st.manual == 0 && st.sending == 0 && (!st.slow || now.Sub(st.seen) > forgetAfter) {
		delete(d.hooks, id)
	}
}

// sweep forgets the slow webhooks not heard from in forgetAfter.
func (d *Dispatcher) sweep() {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.cfg.Now()
	for id, st := range d.hooks {
		d.forget(id, st, now)
	}
}

// share is what one webhook of no known account may hold now:
// Concurrency/(webhooks holding slots + 1). d.mu is held.
func (d *Dispatcher) share() int { return max(1, d.cfg.Concurrency/(d.active+1)) }

// shareOf is what a webhook may hold now: its account's share/(the
// account's webhooks holding slots + 1). d.mu is held.
func (d *Dispatcher) shareOf(st *hookState) int {
	if st.account == "" {
		return d.share()
	}
	holders, hooks := d.accountsActive, 0
	if a := d.accounts[st.account]; a != nil {
		hooks = a.hooks
	} else {
		holders++ // it would hold once claimed for
	}
	return max(1, accountShare(d.cfg.Concurrency, holders)/(hooks+1))
}

// accountShare is what the webhooks of one account may hold together when
// holders accounts hold slots, the asking one counted: the process less an
// eighth kept free for an account that holds nothing yet (so its first
// attempts never wait for another account's time-outs), split evenly. An
// account alone keeps seven eighths: sharing costs a lone account little,
// and the webhook shares and the slow half bind long before on one account.
func accountShare(concurrency, holders int) int {
	keep := concurrency / 8
	return max(1, (concurrency-keep)/max(1, holders))
}

// accountRoom is what a claim may still take of an account's webhooks
// together. d.mu is held.
func (d *Dispatcher) accountRoom(account string) int {
	held := d.heldBy(account)
	holders := d.accountsActive
	if held == 0 {
		holders++ // it would hold once claimed for
	}
	return accountShare(d.cfg.Concurrency, holders) - held
}

// hold changes what a webhook holds, automatic and manual, keeping count of
// the webhooks that hold any (share runs on every recorded outcome, so it
// must not walk every webhook). d.mu is held.
func (d *Dispatcher) hold(st *hookState, automatic, manual int) {
	before := st.held+st.manual > 0
	st.held += automatic
	st.manual += manual
	d.inUse += automatic + manual
	hooks := 0
	switch after := st.held+st.manual > 0; {
	case after && !before:
		d.active++
		hooks = 1
	case before && !after:
		d.active--
		hooks = -1
	}
	d.holdAccount(st.account, automatic+manual, hooks)
}

// signal wakes whoever waits for a slot of the webhook. d.mu is held.
func (st *hookState) signal() {
	close(st.wake)
	st.wake = make(chan struct{})
}

// roomOf is what a claim may still take of a webhook, and the least worth
// a claim. d.mu is held.
func (d *Dispatcher) roomOf(st *hookState, share int) (room, worth int) {
	hold := 2 * st.limit
	if st.slow {
		hold = st.limit
	}
	hold = min(hold, share)
	if st.rate > 0 {
		// A throttled webhook's logs wait in the queue, not here.
		hold = min(hold, throttleRoom(st.rate))
	}
	return hold - (st.held - st.recording) - st.manual, max(1, hold/4)
}

// room says how much a claim may take: the default for webhooks with no
// standing here, what each webhook with one may still hold, and the
// webhooks passed over (no room, or too little to be worth a claim while
// their earlier logs are in flight); then the same for accounts.
func (d *Dispatcher) room() (perWebhook int, room map[string]int, exclude []string, perAccount int, accountRoom map[string]int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	accountRoom = make(map[string]int, len(d.accounts))
	for account := range d.accounts {
		accountRoom[account] = max(0, d.accountRoom(account))
	}
	slowHeld := 0
	for _, st := range d.hooks {
		if st.slow {
			slowHeld += st.held + st.manual
		}
	}
	slowFull := slowHeld >= max(1, d.cfg.Concurrency/2)
	room = make(map[string]int, len(d.hooks))
	for id, st := range d.hooks {
		n, worth := d.roomOf(st, d.shareOf(st))
		full := st.account != "" && accountRoom[st.account] <= 0 && d.heldBy(st.account) > 0
		if full || (st.slow && slowFull) || n <= 0 || (n < worth && st.held-st.recording+st.manual > 0) {
			exclude = append(exclude, id)
			continue
		}
		room[id] = n
	}
	return min(startLimit, d.share(), d.cfg.PerWebhook), room, exclude, d.accountRoom(""), accountRoom
}

// takeNow takes a request slot of the webhook if one is free before
// deadline, without waiting, and reports whether it did.
func (d *Dispatcher) takeNow(id string, deadline time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.hook(id, "")
	if d.cfg.Now().Before(deadline) && st.sending < st.limit {
		st.sending++
		return true
	}
	return false
}

// take waits until the webhook has a request slot free, takes it, and
// reports true; or reports false at deadline (or when stop closes).
func (d *Dispatcher) take(id string, deadline time.Time, stop <-chan struct{}) bool {
	t := time.NewTimer(deadline.Sub(d.cfg.Now()))
	defer t.Stop()
	d.mu.Lock()
	for {
		st := d.hook(id, "")
		if !d.cfg.Now().Before(deadline) {
			d.mu.Unlock()
			return false
		}
		if st.sending < st.limit {
			st.sending++
			d.mu.Unlock()
			return true
		}
		wake := st.wake
		d.mu.Unlock()
		select {
		case <-wake:
		case <-t.C:
			return false
		case <-stop:
			return false
		}
		d.mu.Lock()
	}
}

// done ends a request taken with take, and lets its answer move the
// webhook's limit.
func (d *Dispatcher) done(id string, res Result) {
	now := d.cfg.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.hook(id, "")
	st.sending--
	st.seen = now
	slowAfter := d.cfg.AttemptTimeout / 3
	switch {
	case res.Duration < min(time.Second, slowAfter):
		st.limit, st.slow = min(st.limit+1, d.cfg.PerWebhook), false
	case res.Duration >= slowAfter:
		st.limit, st.slow = max(1, st.limit/2), true
	}
	st.signal()
	d.forget(id, st, now)
}

// untake gives back a slot taken with take and not used.
func (d *Dispatcher) untake(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.hook(id, "")
	st.sending--
	st.signal()
	d.forget(id, st, d.cfg.Now())
}

// manual makes a Test's or Resend's request within the webhook's slots.
func (d *Dispatcher) manual(stop <-chan struct{}, account, id string, send func() Result) (Result, error) {
	d.mu.Lock()
	d.hold(d.hook(id, account), 0, 1)
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		st := d.hook(id, "")
		d.hold(st, 0, -1)
		d.forget(id, st, d.cfg.Now())
		d.mu.Unlock()
		d.signalFreed()
	}()
	if !d.take(id, d.cfg.Now().Add(manualWait), stop) {
		return Result{}, ErrBusy
	}
	res := send()
	d.done(id, res)
	return res, nil
}
