package store

import "context"

// Hooks for tests, of the store and of the packages above it: they open a
// store as an older herald left it, and hold or count the shared
// statements of changes (changebatch.go). Nothing in herald calls them.

// OpenAtVersion opens a store migrated only up to version, so a test can
// write rows as an older herald did before the later migrations run.
func OpenAtVersion(ctx context.Context, url string, opts Options, version int) (*Store, error) {
	return open(ctx, url, opts, version)
}

// SetBeforeChange has fn run between ChangeAndFire's read of the webhooks
// and its statement, at every try, so that a test can change the webhooks
// there.
func SetBeforeChange(st *Store, fn func()) { st.beforeChange = fn }

// SetChangeBatchesAtOnce sets how many shared statements of changes run at
// once (changebatch.go).
func SetChangeBatchesAtOnce(st *Store, n int) {
	st.changeBatches.mu.Lock()
	defer st.changeBatches.mu.Unlock()
	st.changeBatches.atOnce = n
}

// ChangeBatches says how many shared statements of changes have run and
// how many changes wait for one.
func ChangeBatches(st *Store) (ran, waiting int) {
	st.changeBatches.mu.Lock()
	defer st.changeBatches.mu.Unlock()
	return st.changeBatches.ran, len(st.changeBatches.waiting)
}
