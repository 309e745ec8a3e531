package store

import (
	"errors"
	"strings"
	"sync"
)

// The subscribed webhooks of a change and its event, kept in the process
// (decision 0109). On PostgreSQL ChangeAndFire would read an account's
// webhooks subscribed to the event's kind before its one statement, a round
// trip of its three. It keeps what it read, with the account's
// webhooks_version read in the same statement, and the next change of that
// account and kind uses it without a read: its statement checks the version
// (firedStatement's unchanged; herald_webhooks_stale, migration 0090) and
// fails whole, having written nothing, when a webhook changed meanwhile, in
// this process or any other; the change is then made again after a fresh
// read. A trigger on webhooks moves the version at every change a firing
// would see, so no path that writes webhooks can leave a stale set in use.

// webhookSetKey names a set: an account's webhooks that may subscribe to
// kinds, with what a handoff needs of each or not.
type webhookSetKey struct {
	account, kinds string
	handoff        bool
}

// webhookSet is a set read at version.
type webhookSet struct {
	version int64
	targets []*target
}

// The bounds of the sets kept. A set is kept only when it is small (an
// account with more webhooks pays its read, which is small beside its
// firing's logs), and the whole store forgets every set when it holds as
// many as it may, so that accounts and kinds without end cost no more
// memory than this.
const (
	maxWebhookSets    = 1024
	maxWebhookSetSize = 64
)

// webhookSets is the sets kept by one Store.
type webhookSets struct {
	mu   sync.Mutex
	sets map[webhookSetKey]webhookSet
}

func newWebhookSetKey(account string, kinds []string, handoff bool) webhookSetKey {
	return webhookSetKey{account: account, kinds: strings.Join(kinds, ","), handoff: handoff}
}

func (w *webhookSets) get(k webhookSetKey) (webhookSet, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.sets[k]
	return s, ok
}

// put keeps a set, unless it is too large to.
func (w *webhookSets) put(k webhookSetKey, s webhookSet) {
	if len(s.targets) > maxWebhookSetSize {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sets == nil || len(w.sets) >= maxWebhookSets {
		w.sets = map[webhookSetKey]webhookSet{}
	}
	w.sets[k] = s
}

// forget drops every set of the account.
func (w *webhookSets) forget(account string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range w.sets {
		if k.account == account {
			delete(w.sets, k)
		}
	}
}

// webhooksSeen is the version of an account's webhooks that a change's
// statement must still find.
type webhooksSeen struct {
	account string
	version int64
}

// isWebhooksChanged says whether err is herald_webhooks_stale's: the
// account's webhooks changed after the set the statement used was read.
func isWebhooksChanged(err error) bool {
	var pg interface{ SQLState() string }
	return errors.As(err, &pg) && pg.SQLState() == "HW001"
}
