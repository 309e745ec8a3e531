package licensing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// Release is a version of a product with its files, as the API answers it
// and release events carry it.
type Release struct {
	ID        string        `json:"id"`
	ProductID string        `json:"productId"`
	Version   string        `json:"version"`
	Files     []ReleaseFile `json:"files"`
	CreatedAt Time          `json:"createdAt"`
	UpdatedAt Time          `json:"updatedAt"`
}

// ReleaseFile describes one file of a release; herald keeps the
// description, not the bytes.
type ReleaseFile struct {
	ID        string  `json:"id"`
	ReleaseID string  `json:"releaseId"`
	Filename  string  `json:"filename"`
	Size      int64   `json:"size"`
	SHA256    *string `json:"sha256"`
	CreatedAt Time    `json:"createdAt"`
}

// ReleaseInput creates a release.
type ReleaseInput struct {
	ProductID Optional[string] `json:"productId"`
	Version   Optional[string] `json:"version"`
}

// ReleaseFileInput adds a file to a release.
type ReleaseFileInput struct {
	Filename Optional[string] `json:"filename"`
	Size     Optional[int64]  `json:"size"`
	SHA256   Optional[string] `json:"sha256"`
}

// ReleaseFilter narrows a release list; "" matches any.
type ReleaseFilter struct {
	ProductID string
	store.Page
}

var sha256Pattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

const (
	releaseColumns = `id, product_id, version, created_at, updated_at`
	fileColumns    = `id, release_id, filename, size, sha256, created_at`
)

func scanRelease(sc scanner) (Release, error) {
	var r Release
	var c, u int64
	if err := sc.Scan(&r.ID, &r.ProductID, &r.Version, &c, &u); err != nil {
		return Release{}, err
	}
	r.Files, r.CreatedAt, r.UpdatedAt = []ReleaseFile{}, fromMS(c), fromMS(u)
	return r, nil
}

func scanFile(sc scanner) (ReleaseFile, error) {
	var f ReleaseFile
	var sum sql.NullString
	var c int64
	if err := sc.Scan(&f.ID, &f.ReleaseID, &f.Filename, &f.Size, &sum, &c); err != nil {
		return ReleaseFile{}, err
	}
	if sum.Valid {
		f.SHA256 = &sum.String
	}
	f.CreatedAt = fromMS(c)
	return f, nil
}

// withFiles loads the files of releases, oldest first, in one query.
func withFiles(ctx context.Context, q querier, accountID string, releases []Release) error {
	if len(releases) == 0 {
		return nil
	}
	args := []any{accountID}
	at := map[string]int{}
	for i, r := range releases {
		args, at[r.ID] = append(args, r.ID), i
	}
	rows, err := q.Query(ctx, `SELECT `+fileColumns+` FROM release_files WHERE account_id = ? AND release_id IN (`+
		store.Placeholders(len(releases))+`) ORDER BY id`, args...)
	if err != nil {
		return fmt.Errorf("read release files: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		f, err := scanFile(rows)
		if err != nil {
			return fmt.Errorf("read release files: %w", err)
		}
		r := &releases[at[f.ReleaseID]]
		r.Files = append(r.Files, f)
	}
	return rows.Err()
}

func getRelease(ctx context.Context, q querier, accountID, id, lock string) (Release, error) {
	r, err := scanRelease(q.QueryRow(ctx, `SELECT `+releaseColumns+` FROM releases WHERE account_id = ? AND id = ?`+lock, accountID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Release{}, notFound("release")
	}
	if err != nil {
		return Release{}, fmt.Errorf("read release: %w", err)
	}
	rs := []Release{r}
	if err := withFiles(ctx, q, accountID, rs); err != nil {
		return Release{}, err
	}
	return rs[0], nil
}

var errVersionTaken = ConflictError{"the product already has a release with this version"}

// CreateRelease creates a release of a product, with no files, and fires
// release.created.
func (s *Service) CreateRelease(ctx context.Context, accountID string, in ReleaseInput) (Release, error) {
	var v InvalidError
	var productID string
	if v.present("productId", in.ProductID.Set, in.ProductID.Value != nil, true) {
		productID = v.id("productId", *in.ProductID.Value)
	}
	if v.present("version", in.Version.Set, in.Version.Value != nil, true) {
		*in.Version.Value = strings.TrimSpace(*in.Version.Value)
		v.text("version", *in.Version.Value, 1, maxVersion)
	}
	if err := v.err(); err != nil {
		return Release{}, err
	}
	var r Release
	err := s.change(ctx, accountID, func(tx *store.Tx) error {
		if ok, err := exists(ctx, tx, "products", accountID, productID); err != nil {
			return err
		} else if !ok {
			return invalid("productId", "names no product of this account")
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM releases WHERE product_id = ? AND version = ?`, productID, *in.Version.Value).Scan(&n); err != nil {
			return fmt.Errorf("check version: %w", err)
		}
		if n > 0 {
			return errVersionTaken
		}
		now := fromMS(store.MS(tx.Now()))
		r = Release{ID: store.NewID(), ProductID: productID, Version: *in.Version.Value, Files: []ReleaseFile{}, CreatedAt: now, UpdatedAt: now}
		if _, err := tx.Exec(ctx, `INSERT INTO releases (id, account_id, product_id, version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
			r.ID, accountID, r.ProductID, r.Version, store.MS(now.Time), store.MS(now.Time)); err != nil {
			return uniqueOr(fmt.Errorf("insert release: %w", err), errVersionTaken)
		}
		_, err := tx.Fire(ctx, accountID, event.ReleaseCreated, r)
		return err
	})
	return r, err
}

// Release returns one release with its files.
func (s *Service) Release(ctx context.Context, accountID, id string) (Release, error) {
	return getRelease(ctx, s.store, accountID, id, "")
}

// Releases lists an account's releases, newest first, each with its files.
func (s *Service) Releases(ctx context.Context, accountID string, f ReleaseFilter) ([]Release, string, error) {
	q := `SELECT ` + releaseColumns + ` FROM releases WHERE account_id = ?`
	args := []any{accountID}
	if f.ProductID != "" {
		q, args = q+` AND product_id = ?`, append(args, f.ProductID)
	}
	out, next, err := list(ctx, s, q, args, f.Page, scanRelease, func(r Release) string { return r.ID })
	if err == nil {
		err = withFiles(ctx, s.store, accountID, out)
	}
	if err != nil {
		return nil, "", fmt.Errorf("list releases: %w", err)
	}
	return out, next, nil
}

// DeleteRelease deletes a release and fires release.deleted with the
// release as it was, files included. The files go with it by cascade,
// firing nothing.
func (s *Service) DeleteRelease(ctx context.Context, accountID, id string) error {
	return s.change(ctx, accountID, func(tx *store.Tx) error {
		r, err := getRelease(ctx, tx, accountID, id, tx.ForUpdate())
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM releases WHERE account_id = ? AND id = ?`, accountID, id); err != nil {
			return fmt.Errorf("delete release: %w", err)
		}
		_, err = tx.Fire(ctx, accountID, event.ReleaseDeleted, r)
		return err
	})
}

var errFilenameTaken = ConflictError{"the release already has a file with this filename"}

// CreateReleaseFile records a file of a release and sets the release's
// updatedAt. Files fire no event.
func (s *Service) CreateReleaseFile(ctx context.Context, accountID, releaseID string, in ReleaseFileInput) (ReleaseFile, error) {
	var f ReleaseFile
	err := s.store.InTx(ctx, func(tx *store.Tx) error {
		if _, err := getRelease(ctx, tx, accountID, releaseID, tx.ForUpdate()); err != nil {
			return err
		}
		var v InvalidError
		if v.present("filename", in.Filename.Set, in.Filename.Value != nil, true) {
			v.text("filename", *in.Filename.Value, 1, 255)
		}
		if v.present("size", in.Size.Set, in.Size.Value != nil, true) && *in.Size.Value < 0 {
			v.add("size", "must be a number of bytes, 0 or more")
		}
		if in.SHA256.Value != nil && !sha256Pattern.MatchString(*in.SHA256.Value) {
			v.add("sha256", "must be 64 lowercase hex digits, or null")
		}
		if err := v.err(); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM release_files WHERE release_id = ? AND filename = ?`, releaseID, *in.Filename.Value).Scan(&n); err != nil {
			return fmt.Errorf("check filename: %w", err)
		}
		if n > 0 {
			return errFilenameTaken
		}
		now := fromMS(store.MS(tx.Now()))
		f = ReleaseFile{ID: store.NewID(), ReleaseID: releaseID, Filename: *in.Filename.Value, Size: *in.Size.Value, SHA256: in.SHA256.Value, CreatedAt: now}
		if _, err := tx.Exec(ctx, `INSERT INTO release_files (id, account_id, release_id, filename, size, sha256, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			f.ID, accountID, releaseID, f.Filename, f.Size, f.SHA256, store.MS(now.Time)); err != nil {
			return uniqueOr(fmt.Errorf("insert release file: %w", err), errFilenameTaken)
		}
		return touchRelease(ctx, tx, accountID, releaseID)
	})
	return f, err
}

// DeleteReleaseFile removes a file from a release and sets the release's
// updatedAt; it fires nothing.
func (s *Service) DeleteReleaseFile(ctx context.Context, accountID, releaseID, fileID string) error {
	return s.store.InTx(ctx, func(tx *store.Tx) error {
		if _, err := getRelease(ctx, tx, accountID, releaseID, tx.ForUpdate()); err != nil {
			return err
		}
		res, err := tx.Exec(ctx, `DELETE FROM release_files WHERE account_id = ? AND release_id = ? AND id = ?`, accountID, releaseID, fileID)
		if err != nil {
			return fmt.Errorf("delete release file: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return notFound("release file")
		}
		return touchRelease(ctx, tx, accountID, releaseID)
	})
}

func touchRelease(ctx context.Context, tx *store.Tx, accountID, id string) error {
	if _, err := tx.Exec(ctx, `UPDATE releases SET updated_at = ? WHERE account_id = ? AND id = ?`, store.MS(tx.Now()), accountID, id); err != nil {
		return fmt.Errorf("touch release: %w", err)
	}
	return nil
}
