// Package storetest is the behaviour suite every store engine runs:
// Exercise(t, newURL) checks claims and leases, outcomes and health,
// concurrency across several store handles on one database (as several
// herald processes would hold), the email outbox, migrations, wake-ups,
// idempotency keys, API tokens, recoveries, and the warnings of a
// webhook's health (emails, operational events, reminders). A behaviour is
// tested here, across engines, never in one engine's test alone. It drives
// the store directly, with a clock the test moves. Packages above the
// store whose behaviour rests on it (licensing's expiries, retention's
// purges) run their cases with Run from their own tests: the suite imports
// nothing above the store.
package storetest

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// Exercise runs the suite; newURL returns a new, empty database of the
// engine under test for each test.
func Exercise(t *testing.T, newURL func(testing.TB) string) {
	Run(t, newURL, []Case{
		{"FireQueuesOrCancels", 1, testFireQueuesOrCancels},
		{"PullReadsInOrderAndAcknowledgesByCursor", 1, testPullReadsInOrderAndAcknowledgesByCursor},
		{"PullWaitsForAFiring", 2, testPullWaitsForAFiring},
		{"UnacknowledgedPullsExpire", 1, testUnacknowledgedPullsExpire},
		{"LicenseEventsAreNumbered", 3, testLicenseEventsAreNumbered},
		{"RetryPolicyIsKeptAndClaimed", 1, testRetryPolicyIsKeptAndClaimed},
		{"ReachIsSealedKeptAndWarned", 1, testReachIsSealedKeptAndWarned},
		{"GoneDisablesTheWebhookOnce", 1, testGoneDisablesTheWebhookOnce},
		{"AChangeAndItsEventAreOneWrite", 1, testAChangeAndItsEventAreOneWrite},
		{"ChangesMadeAtOnceAreEachMadeAsAlone", 1, testChangesMadeAtOnceAreEachMadeAsAlone},
		{"AChangeSeesEveryWebhookChangeBeforeIt", 2, testAChangeSeesEveryWebhookChangeBeforeIt},
		{"AKeptTokenIsCheckedInItsStatement", 2, testAKeptTokenIsCheckedInItsStatement},
		{"ClaimTakesDueLogsUnderALease", 1, testClaimTakesDueLogsUnderALease},
		{"ClaimCapsEachWebhookAndPassesOverExcluded", 1, testClaimCapsEachWebhook},
		{"ExpiredLeaseIsTakenOverAndStaleOutcomeDropped", 2, testExpiredLeaseTakenOver},
		{"ConcurrentClaimsTakeEachLogOnce", 3, testConcurrentClaims},
		{"LeasesAreRenewedAndReleased", 2, testLeasesRenewAndRelease},
		{"RenewalWaitsForNoRowLock", 1, testRenewalWaitsForNoRowLock},
		{"AClaimUnsureOfItsWritesTakesNoLeaseOver", 2, testNoTakeover},
		{"BeatsAreEachProcessOwn", 1, testBeats},
		{"RemovingAPersonRevokesTheTokensTheyMade", 1, testRemovingAPersonRevokesTheirTokens},
		{"ClaimGivesEachWebhookItsRoom", 1, testClaimGivesEachWebhookItsRoom},
		{"ClaimPassesOverExcludedBeforeItsWindow", 1, testClaimPassesOverExcludedBeforeItsWindow},
		{"ClaimSharesBetweenWebhooksBehindOneBacklog", 1, testClaimSharesBehindOneBacklog},
		{"ClaimSharesBetweenAccounts", 1, testClaimSharesBetweenAccounts},
		{"ClaimTakesFirstAttemptsBeforeRetries", 1, testClaimTakesFirstAttemptsBeforeRetries},
		{"ResendMarksItsLogInFlight", 1, testBeginResend},
		{"ResendOfAWaitingLogKeepsOrEndsItsPlace", 1, testResendOfAWaitingLog},
		{"FireKeepsTheTraceContextForEveryAttempt", 1, testFireKeepsTraceContext},
		{"HealthFollowsTheFailureStreak", 1, testHealthStreak},
		{"ConcurrentFailuresSuspendOnceAndQueueOneEmail", 4, testConcurrentFailuresSuspendOnce},
		{"ConcurrentDeliveryIsNeverALostTransition", 4, testConcurrentDeliveryNotLost},
		{"BatchesTouchingWebhooksInAnyOrderDoNotDeadlock", 4, testBatchesDoNotDeadlock},
		{"EmailsAreClaimedOnce", 3, testEmailsClaimedOnce},
		{"DeletionTakesTheLogsAttempts", 1, testDeletionTakesAttempts},
		{"ConcurrentOpensMigrateAndBootstrapOnce", 6, testConcurrentOpens},
		{"WrongKeyIsRefused", 2, testWrongKey},
		{"CommitWakesWaitersOfEveryHandle", 3, testWake},
		{"WebhookChangesThatFreeLogsWakeTheDispatchers", 2, testUpdateWakes},
		{"RateCountsAddUpAcrossProcesses", 2, testRateCountsAddUp},
		{"SignInLimitsCountEveryKeyAndRefuseWhenFull", 1, testSignInLimits},
		{"GaugesCountTheBacklogWebhooksAndOutbox", 1, testGauges},
		{"WriterSaysWhatItDid", 1, testWriterStats},
		{"IdempotencyKeysReplayRefuseAndExpire", 1, testIdempotencyKeys},
		{"IdempotencyKeyOfACrashedTryIsFreedOnlyIfUnapplied", 2, testIdempotencyAfterACrash},
		{"ConcurrentIdempotentClaimsClaimOnce", 3, testConcurrentIdempotentClaims},
		{"APITokensAreScopedListedExpiredAndRevoked", 1, testAPITokens},
		{"APITokenUseIsRecordedSparinglyAndRevocationSeenEverywhere", 2, testAPITokenUseAcrossProcesses},
		{"WebhookListsSearchCountAndPage", 1, testWebhookListsSearchCountAndPage},
		{"LogListsFilterCountAndPage", 1, testLogListsFilterCountAndPage},
		{"LogDateRangesAreExactToTheMillisecond", 1, testLogDateRangesAreExactToTheMillisecond},
		{"AnEventsLogsAreFoundByItsID", 1, testAnEventsLogsAreFoundByItsID},
		{"AccountsAreListedAndDeletedWithEverythingInThem", 1, testAccountsListedAndDeleted},
		{"PeopleAndSignInLinks", 1, testPeopleAndLinks},
		{"OwnersDemotingEachOtherKeepOne", 2, testOwnersDemotingEachOtherKeepOne},
		{"RecoveryChoosesItsLogs", 1, testRecoveryChoosesItsLogs},
		{"RecoveryResendsEachLogOnceAcrossATakeover", 3, testRecoveryResendsEachLogOnce},
		{"RecoveryGivesBackUnsentLogsAndStopsWhenDisabled", 1, testRecoveryStopsWhenDisabled},
		{"UndeliveredCountAndLogsOfSeveralStatuses", 1, testUndeliveredCount},
		{"RecoverySkipsLogsDeliveredMeanwhile", 1, testRecoverySkipsLogsDeliveredMeanwhile},
		{"RecoveryTakesEventsOldestFirst", 1, testRecoveryTakesEventsOldestFirst},
		{"OrdinaryBatchRecordsEachOutcome", 1, testOrdinaryBatchRecordsEachOutcome},
		{"HealthChangesWarnByEmailAndOperationalEvents", 1, testWarnings},
		{"SuspendedWebhooksAreRemindedOncePerPeriod", 3, testReminders},
		{"FlashesAreShownOnceOnTheirPage", 1, testFlashes},
		{"FormKeysKeepAnswersOnlyOfChanges", 1, testFormKeysSettle},
		{"TokenRotationOverlapsThenSwitches", 1, testTokenRotation},
		{"AttemptHeadersAreKeptBounded", 1, testAttemptHeadersAreKeptBounded},
		{"AccountLimitsCapWebhooksEvenConcurrently", 3, testAccountLimits},
		{"FiltersChooseWhoGetsALog", 1, testFiltersChooseWhoGetsALog},
		{"HeadersAreSealedAndClaimed", 1, testHeadersAreSealedAndClaimed},
		{"ADestinationsConfigIsSealed", 1, testADestinationsConfigIsSealed},
		{"SignatureSchemeIsKeptAndClaimed", 1, testSignatureSchemeIsKeptAndClaimed},
		{"RateLimitIsKeptAndClaimed", 1, testRateLimitIsKeptAndClaimed},
		{"ReservationsTakeDisjointSlots", 3, testReservationsTakeDisjointSlots},
		{"ReleaseAtATimeDefersWithoutAnAttempt", 1, testReleaseAtATimeDefersWithoutAnAttempt},
		{"FireBatchFiresAsOneByOne", 1, testFireBatchFiresAsOneByOne},
		{"OrderedClaimsFollowEachLicense", 2, testOrderedClaimsFollowEachLicense},
		{"AFailedOrderedLogHoldsItsLicense", 1, testAFailedOrderedLogHoldsItsLicense},
		{"OrderedClaimsAcrossHandles", 3, testOrderedClaimsAcrossHandles},
	})
}

// Case is one behaviour of the suite. A package above the store whose
// behaviour rests on the store's (licensing's expiries, retention's
// purges) keeps its cases beside its own code and runs them with Run, so
// that both engines run them without the store's suite importing it.
type Case struct {
	Name    string
	Handles int // store handles open at once: each holds PostgreSQL connections
	Fn      func(*testing.T, *Bundle)
}

// Run runs cases in parallel, each on a new database of the engine newURL
// gives, with a Bundle of its own.
func Run(t *testing.T, newURL func(testing.TB) string, cases []Case) {
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			t.Parallel()
			testdb.PostgresHandles(t, tt.Handles)
			tt.Fn(t, setup(t, newURL))
		})
	}
}

// Bundle is one test's database: its URL, key and clock, a first store
// handle, and an account in it.
type Bundle struct {
	Ctx     context.Context
	NewURL  func(testing.TB) string // another new database
	url     string
	Key     []byte // the store's key
	Clock   *Clock
	St      *store.Store  // the first handle
	Q       *queue.Queue  // its event pipeline
	Account store.Account // the test's account
}

func setup(t *testing.T, newURL func(testing.TB) string) *Bundle {
	t.Helper()
	b := &Bundle{Ctx: context.Background(), NewURL: newURL, url: newURL(t), Key: make([]byte, 32), Clock: &Clock{t: time.UnixMilli(time.Now().UnixMilli()).UTC()}}
	rand.Read(b.Key)
	b.St = b.Open(t)
	b.Q = queue.New(b.St)
	b.Account = b.NewAccount(t, "a@example.com")
	return b
}

// Open returns another handle on the test's database, as another herald
// process would hold; it closes at the end of the test. SQLite serves one
// process (a second open is refused), so there it returns the one handle,
// which concurrent goroutines share as one process's would.
func (b *Bundle) Open(t testing.TB) *store.Store {
	t.Helper()
	if b.St != nil && b.St.Engine() == "sqlite" {
		return b.St
	}
	st, err := store.Open(b.Ctx, b.url, store.Options{Key: b.Key, Now: b.Clock.Now})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// NewAccount creates another account with an owner and a token.
func (b *Bundle) NewAccount(t testing.TB, email string) store.Account {
	t.Helper()
	a, err := b.St.CreateAccount(b.Ctx, store.Bootstrap{AccountName: email, OwnerEmail: email, PasswordHash: "x", TokenHash: store.NewID()})
	if err != nil {
		t.Fatalf("create account: %v", err)
	}
	return a
}

// Webhook creates an enabled webhook of the test's account subscribed to
// license.created.
func (b *Bundle) Webhook(t testing.TB, name string) store.Webhook {
	t.Helper()
	w, err := b.St.CreateWebhook(b.Ctx, b.Account.ID, store.NewWebhook{Name: name, URL: "https://example.com/" + name,
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_" + name + "_0123456789"})
	if err != nil {
		t.Fatalf("create webhook: %v", err)
	}
	return w
}

// Fire fires n license.created events of the test's account through st and
// returns their ids.
func (b *Bundle) Fire(t testing.TB, st *store.Store, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		err := st.InTx(b.Ctx, func(tx *store.Tx) error {
			id, err := tx.Fire(b.Ctx, b.Account.ID, event.LicenseCreated, map[string]any{"n": i})
			ids = append(ids, id)
			return err
		})
		if err != nil {
			t.Fatalf("fire: %v", err)
		}
	}
	return ids
}

// Claim claims through st at the clock's time plus at, under a lease of
// lease, and returns the claims.
func (b *Bundle) Claim(t testing.TB, st *store.Store, at, lease time.Duration, limit, perWebhook int, exclude ...string) []store.Claim {
	t.Helper()
	now := b.Clock.Now().Add(at)
	cs, err := queue.New(st).Claim(b.Ctx, store.ClaimParams{Now: now, LeaseUntil: now.Add(lease), Lease: store.NewID(),
		Limit: limit, PerWebhook: perWebhook, Exclude: exclude})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return cs
}

// logs lists the account's logs (up to 500) by status.
func (b *Bundle) logs(t testing.TB, f store.LogFilter) []store.EventLog {
	t.Helper()
	f.Limit = 500
	list, _, err := b.St.Logs(b.Ctx, b.Account.ID, f)
	if err != nil {
		t.Fatalf("list logs: %v", err)
	}
	return list
}

func (b *Bundle) log(t testing.TB, id string) store.EventLog {
	t.Helper()
	l, err := b.St.Log(b.Ctx, b.Account.ID, id)
	if err != nil {
		t.Fatalf("read log %s: %v", id, err)
	}
	return l
}

func (b *Bundle) health(t testing.TB, webhookID string) (store.Health, int) {
	t.Helper()
	var status string
	var streak int
	if err := b.St.QueryRow(b.Ctx, `SELECT status, failure_streak FROM webhooks WHERE id = ?`, webhookID).Scan(&status, &streak); err != nil {
		t.Fatalf("read health: %v", err)
	}
	return store.Health(status), streak
}

// Count runs a COUNT query on the first handle.
func (b *Bundle) Count(t testing.TB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := b.St.QueryRow(b.Ctx, query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// Complete records outcomes through st.
func (b *Bundle) Complete(t testing.TB, st *store.Store, suspendAfter int, outs ...store.Outcome) []store.Suspension {
	t.Helper()
	sp, err := queue.New(st).Complete(b.Ctx, outs, suspendAfter)
	if err != nil {
		t.Fatalf("complete: %v", err)
	}
	return sp
}

// Outcome is an automatic attempt's outcome for a claim.
func Outcome(c store.Claim, r store.Result, code int, at time.Time) store.Outcome {
	o := store.Outcome{LogID: c.LogID, WebhookID: c.WebhookID, Lease: c.Lease, Trigger: store.TriggerAutomatic, Result: r}
	if r == store.Cancel {
		o.Reason = "cancelled in a test"
		return o
	}
	recv := at.Add(5 * time.Millisecond)
	o.Attempt = &store.AttemptRecord{SentAt: at, ReceivedAt: &recv, StatusCode: &code, Duration: 5 * time.Millisecond, ResponseBody: []byte(fmt.Sprint(code))}
	switch r {
	case store.Retry:
		o.NextAt, o.Reason = at.Add(time.Minute), fmt.Sprintf("receiver answered %d", code)
	case store.Exhausted:
		o.Reason = fmt.Sprintf("receiver answered %d; no attempts left", code)
	}
	return o
}

// clock is a test's time, moved by hand.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Parallel runs fn(i) for i in [0, n) at once and waits for all.
func Parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}
