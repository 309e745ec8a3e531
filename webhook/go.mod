module github.com/heraldhq/herald/webhook

// The oldest Go this package builds with: http.MaxBytesError, which
// Middleware tells a 413 by, came in Go 1.19, and every other symbol and
// language feature it uses is older (goversion_test.go checks that). A
// receiver's go.mod is raised to at least this line by go mod tidy, so keep
// it as low as the code allows.
go 1.19
