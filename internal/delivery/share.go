package delivery

import (
	"errors"
	"sync"
	"sync/atomic"
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

// slots owns how much of the process each account and webhook holds and
// may still take: the slots of the logs claimed or handed over and not yet
// recorded and of the manual sends (Concurrency in all), the room a claim
// may take, and each webhook's requests in flight, the limit its answers
// earned. Its mutex also guards what the producer knows of the queue and
// the pacer's debts, which a reservation at firing weighs together with
// the room.
type slots struct {
	cfg *Config

	mu     sync.Mutex
	hooks  map[string]*hookState // webhook id → its standing here
	active int                   // of them, those holding slots
	inUse  int                   // the slots they hold, automatic and manual (see total)
	// accounts holds what each account's webhooks hold, for accounts
	// holding any; accountsActive is how many those are.
	accounts       map[string]*accountState
	accountsActive int

	freed     chan struct{} // signalled when a slot frees
	claimable atomic.Bool   // a webhook's room became worth a claim since the last sleep
}

func newSlots(cfg *Config) *slots {
	return &slots{cfg: cfg, hooks: map[string]*hookState{}, accounts: map[string]*accountState{}, freed: make(chan struct{}, 1)}
}

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
// names the webhook's account. s.mu is held.
func (s *slots) hook(id, account string) *hookState {
	st := s.hooks[id]
	if st == nil {
		st = &hookState{limit: min(startLimit, s.cfg.PerWebhook), wake: make(chan struct{})}
		s.hooks[id] = st
	}
	if st.account == "" && account != "" {
		st.account = account
		if n := st.held + st.manual; n > 0 {
			s.holdAccount(account, n, 1)
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
// webhooks holding any), keeping count of the accounts that hold any. s.mu
// is held.
func (s *slots) holdAccount(account string, n, hooks int) {
	if account == "" || (n == 0 && hooks == 0) {
		return
	}
	a := s.accounts[account]
	if a == nil {
		a = &accountState{}
		s.accounts[account] = a
		s.accountsActive++
	}
	a.held += n
	a.hooks += hooks
	if a.held <= 0 {
		delete(s.accounts, account)
		s.accountsActive--
	}
}

// heldBy is what an account's webhooks hold here. s.mu is held.
func (s *slots) heldBy(account string) int {
	if a := s.accounts[account]; a != nil {
		return a.held
	}
	return 0
}

// forget drops a standing nobody needs: nothing held or waiting, and
// nothing slow to remember. s.mu is held.
func (s *slots) forget(id string, st *hookState, now time.Time) {
	if st.held == 0 && st.manual == 0 && st.sending == 0 && (!st.slow || now.Sub(st.seen) > forgetAfter) {
		delete(s.hooks, id)
	}
}

// sweep forgets the slow webhooks not heard from in forgetAfter.
func (s *slots) sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	for id, st := range s.hooks {
		s.forget(id, st, now)
	}
}

// share is what one webhook of no known account may hold now:
// Concurrency/(webhooks holding slots + 1). s.mu is held.
func (s *slots) share() int { return max(1, s.cfg.Concurrency/(s.active+1)) }

// shareOf is what a webhook may hold now: its account's share/(the
// account's webhooks holding slots + 1). s.mu is held.
func (s *slots) shareOf(st *hookState) int {
	if st.account == "" {
		return s.share()
	}
	holders, hooks := s.accountsActive, 0
	if a := s.accounts[st.account]; a != nil {
		hooks = a.hooks
	} else {
		holders++ // it would hold once claimed for
	}
	return max(1, accountShare(s.cfg.Concurrency, holders)/(hooks+1))
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
// together. s.mu is held.
func (s *slots) accountRoom(account string) int {
	held := s.heldBy(account)
	holders := s.accountsActive
	if held == 0 {
		holders++ // it would hold once claimed for
	}
	return accountShare(s.cfg.Concurrency, holders) - held
}

// hold changes what a webhook holds, automatic and manual, keeping count of
// the webhooks that hold any (share runs on every recorded outcome, so it
// must not walk every webhook). s.mu is held.
func (s *slots) hold(st *hookState, automatic, manual int) {
	before := st.held+st.manual > 0
	st.held += automatic
	st.manual += manual
	s.inUse += automatic + manual
	hooks := 0
	switch after := st.held+st.manual > 0; {
	case after && !before:
		s.active++
		hooks = 1
	case before && !after:
		s.active--
		hooks = -1
	}
	s.holdAccount(st.account, automatic+manual, hooks)
}

// signal wakes whoever waits for a slot of the webhook. s.mu is held.
func (st *hookState) signal() {
	close(st.wake)
	st.wake = make(chan struct{})
}

// roomOf is what a claim may still take of a webhook, and the least worth
// a claim. s.mu is held.
func (s *slots) roomOf(st *hookState, share int) (room, worth int) {
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
func (s *slots) room() (perWebhook int, room map[string]int, exclude []string, perAccount int, accountRoom map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	accountRoom = make(map[string]int, len(s.accounts))
	for account := range s.accounts {
		accountRoom[account] = max(0, s.accountRoom(account))
	}
	slowHeld := 0
	for _, st := range s.hooks {
		if st.slow {
			slowHeld += st.held + st.manual
		}
	}
	slowFull := slowHeld >= max(1, s.cfg.Concurrency/2)
	room = make(map[string]int, len(s.hooks))
	for id, st := range s.hooks {
		n, worth := s.roomOf(st, s.shareOf(st))
		full := st.account != "" && accountRoom[st.account] <= 0 && s.heldBy(st.account) > 0
		if full || (st.slow && slowFull) || n <= 0 || (n < worth && st.held-st.recording+st.manual > 0) {
			exclude = append(exclude, id)
			continue
		}
		room[id] = n
	}
	return min(startLimit, s.share(), s.cfg.PerWebhook), room, exclude, s.accountRoom(""), accountRoom
}

// takeNow takes a request slot of the webhook if one is free before
// deadline, without waiting, and reports whether it did.
func (s *slots) takeNow(id string, deadline time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.hook(id, "")
	if s.cfg.Now().Before(deadline) && st.sending < st.limit {
		st.sending++
		return true
	}
	return false
}

// take waits until the webhook has a request slot free, takes it, and
// reports true; or reports false at deadline (or when stop closes).
func (s *slots) take(id string, deadline time.Time, stop <-chan struct{}) bool {
	t := time.NewTimer(deadline.Sub(s.cfg.Now()))
	defer t.Stop()
	s.mu.Lock()
	for {
		st := s.hook(id, "")
		if !s.cfg.Now().Before(deadline) {
			s.mu.Unlock()
			return false
		}
		if st.sending < st.limit {
			st.sending++
			s.mu.Unlock()
			return true
		}
		wake := st.wake
		s.mu.Unlock()
		select {
		case <-wake:
		case <-t.C:
			return false
		case <-stop:
			return false
		}
		s.mu.Lock()
	}
}

// done ends a request taken with take, and lets its answer move the
// webhook's limit.
func (s *slots) done(id string, res Result) {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.hook(id, "")
	st.sending--
	st.seen = now
	slowAfter := s.cfg.AttemptTimeout / 3
	switch {
	case res.Duration < min(time.Second, slowAfter):
		st.limit, st.slow = min(st.limit+1, s.cfg.PerWebhook), false
	case res.Duration >= slowAfter:
		st.limit, st.slow = max(1, st.limit/2), true
	}
	st.signal()
	s.forget(id, st, now)
}

// untake gives back a slot taken with take and not used.
func (s *slots) untake(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.hook(id, "")
	st.sending--
	st.signal()
	s.forget(id, st, s.cfg.Now())
}

// manual makes a Test's or Resend's request within the webhook's slots.
func (s *slots) manual(stop <-chan struct{}, account, id string, send func() Result) (Result, error) {
	s.mu.Lock()
	s.hold(s.hook(id, account), 0, 1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		st := s.hook(id, "")
		s.hold(st, 0, -1)
		s.forget(id, st, s.cfg.Now())
		s.mu.Unlock()
		s.signalFreed()
	}()
	if !s.take(id, s.cfg.Now().Add(manualWait), stop) {
		return Result{}, ErrBusy
	}
	res := send()
	s.done(id, res)
	return res, nil
}

// total counts the process's slots in use: logs claimed or handed over and
// not yet recorded, and manual sends.
func (s *slots) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inUse
}

// acquire holds a process slot for a claimed log of the webhook, and notes
// the webhook's rate limit (0 for none), which bounds its claims.
func (s *slots) acquire(accountID, webhookID string, rate int) {
	s.mu.Lock()
	st := s.hook(webhookID, accountID)
	st.rate = rate
	s.hold(st, 1, 0)
	s.mu.Unlock()
}

// attempted notes that an automatic attempt of the webhook has its outcome,
// which now waits only to be recorded: the webhook's room grows (see
// hookState.recording), and a claim is worth making if it grew enough.
func (s *slots) attempted(webhookID string) {
	s.mu.Lock()
	st := s.hook(webhookID, "")
	st.recording++
	worth := s.worthClaim(st)
	s.mu.Unlock()
	if worth {
		s.signalFreed()
	}
}

// worthClaim reports whether a claim may now take enough of the webhook to
// be worth making, and if so marks the process claimable. s.mu is held.
func (s *slots) worthClaim(st *hookState) bool {
	// An account over its share gets nothing from a claim, so its freed
	// slots wake no claim (with 50 hanging webhooks, one per time-out).
	if n, worth := s.roomOf(st, s.shareOf(st)); (n >= worth || st.held-st.recording+st.manual == 0) && s.accountRoom(st.account) > 0 {
		s.claimable.Store(true) // this webhook is worth a claim again
		return true
	}
	return false
}

// release gives back the slot of an automatic attempt whose outcome was
// recorded.
func (s *slots) release(webhookID string) {
	s.mu.Lock()
	st := s.hook(webhookID, "")
	st.recording--
	s.hold(st, -1, 0)
	s.worthClaim(st)
	s.forget(webhookID, st, s.cfg.Now())
	s.mu.Unlock()
	s.signalFreed()
}

func (s *slots) signalFreed() {
	select {
	case s.freed <- struct{}{}:
	default:
	}
}

// takeBehindAutomatic takes a slot of the webhook, like take, but only
// while this process holds none of its automatic attempts (those go first)
// and another slot stays free for the next one: a recovery's resends fill
// the gaps. It reports false when stop closes first.
func (s *slots) takeBehindAutomatic(id string, stop <-chan struct{}) bool {
	s.mu.Lock()
	for {
		st := s.hook(id, "")
		if st.held == 0 && (st.sending < st.limit-1 || (st.limit == 1 && st.sending == 0)) {
			st.sending++
			s.mu.Unlock()
			return true
		}
		wake := st.wake
		s.mu.Unlock()
		select {
		case <-wake:
		case <-stop:
			return false
		case <-time.After(s.cfg.PollInterval):
			// held drops without a signal when an outcome is recorded
		}
		s.mu.Lock()
	}
}

// recoveryBatch is how many logs of a webhook a recovery marks at once: the
// requests in flight the webhook has earned here, within its account's
// share.
func (s *slots) recoveryBatch(account, webhookID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(1, s.hook(webhookID, account).limit-1)
}
