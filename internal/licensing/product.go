package licensing

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// Product is something licenses are sold for, as the API answers it and
// product events carry it.
type Product struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Metadata  json.RawMessage `json:"metadata"`
	CreatedAt Time            `json:"createdAt"`
	UpdatedAt Time            `json:"updatedAt"`
}

// ProductInput creates or changes a product.
type ProductInput struct {
	Name     Optional[string]          `json:"name"`
	Metadata Optional[json.RawMessage] `json:"metadata"`
	// TestData, at creation only, marks a product whose deletion fires
	// no event (herald trigger's, cleaned up after it).
	TestData Optional[bool] `json:"testData"`
}

// querier reads, in a transaction or outside one.
type querier interface {
	QueryRow(ctx context.Context, query string, args ...any) *sql.Row
	Query(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

const productColumns = `id, name, metadata, created_at, updated_at`

func scanProduct(sc scanner) (Product, error) {
	var p Product
	var meta string
	var c, u int64
	if err := sc.Scan(&p.ID, &p.Name, &meta, &c, &u); err != nil {
		return Product{}, err
	}
	p.Metadata, p.CreatedAt, p.UpdatedAt = json.RawMessage(meta), fromMS(c), fromMS(u)
	return p, nil
}

// getProduct reads one product; lock is "" or tx.ForUpdate().
func getProduct(ctx context.Context, q querier, accountID, id, lock string) (Product, error) {
	p, err := scanProduct(q.QueryRow(ctx, `SELECT `+productColumns+` FROM products WHERE account_id = ? AND id = ?`+lock, accountID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Product{}, notFound("product")
	}
	if err != nil {
		return Product{}, fmt.Errorf("read product: %w", err)
	}
	return p, nil
}

// validate checks the fields sent (create requires name) and returns the
// metadata to store.
func (in *ProductInput) validate(create bool) (json.RawMessage, error) {
	var v InvalidError
	if !create && !in.Name.Set && !in.Metadata.Set {
		return nil, invalid("body", "send at least one of name, metadata")
	}
	if v.present("name", in.Name.Set, in.Name.Value != nil, create) {
		*in.Name.Value = strings.TrimSpace(*in.Name.Value)
		v.text("name", *in.Name.Value, 1, maxName)
	}
	meta := v.metadata(in.Metadata)
	if in.TestData.Set && (!create || in.TestData.Value == nil) {
		v.add("testData", "is set at creation only, to true or false")
	}
	return meta, v.err()
}

// CreateProduct creates a product and fires product.created.
func (s *Service) CreateProduct(ctx context.Context, accountID string, in ProductInput) (Product, error) {
	meta, err := in.validate(true)
	if err != nil {
		return Product{}, err
	}
	var p Product
	err = s.change(ctx, accountID, func(tx *store.Tx) error {
		now := fromMS(store.MS(tx.Now()))
		p = Product{ID: store.NewID(), Name: *in.Name.Value, Metadata: meta, CreatedAt: now, UpdatedAt: now}
		testData := in.TestData.Value != nil && *in.TestData.Value
		if _, err := tx.Exec(ctx, `INSERT INTO products (id, account_id, name, metadata, created_at, updated_at, test_data) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			p.ID, accountID, p.Name, string(p.Metadata), store.MS(now.Time), store.MS(now.Time), testData); err != nil {
			return fmt.Errorf("insert product: %w", err)
		}
		_, err := tx.Fire(ctx, accountID, event.ProductCreated, p)
		return err
	})
	return p, err
}

// Product returns one product.
func (s *Service) Product(ctx context.Context, accountID, id string) (Product, error) {
	return getProduct(ctx, s.store, accountID, id, "")
}

// Products lists an account's products, newest first.
func (s *Service) Products(ctx context.Context, accountID string, p store.Page) ([]Product, string, error) {
	out, next, err := list(ctx, s, `SELECT `+productColumns+` FROM products WHERE account_id = ?`, []any{accountID}, p,
		scanProduct, func(p Product) string { return p.ID })
	if err != nil {
		return nil, "", fmt.Errorf("list products: %w", err)
	}
	return out, next, nil
}

// UpdateProduct changes a product's name or metadata (replaced as a whole)
// and fires product.updated.
func (s *Service) UpdateProduct(ctx context.Context, accountID, id string, in ProductInput) (Product, error) {
	var p Product
	err := s.change(ctx, accountID, func(tx *store.Tx) (err error) {
		if p, err = getProduct(ctx, tx, accountID, id, tx.ForUpdate()); err != nil {
			return err
		}
		meta, err := in.validate(false)
		if err != nil {
			return err
		}
		if in.Name.Set {
			p.Name = *in.Name.Value
		}
		if in.Metadata.Set {
			p.Metadata = meta
		}
		p.UpdatedAt = fromMS(store.MS(tx.Now()))
		if _, err := tx.Exec(ctx, `UPDATE products SET name = ?, metadata = ?, updated_at = ? WHERE account_id = ? AND id = ?`,
			p.Name, string(p.Metadata), store.MS(p.UpdatedAt.Time), accountID, id); err != nil {
			return fmt.Errorf("update product: %w", err)
		}
		_, err = tx.Fire(ctx, accountID, event.ProductUpdated, p)
		return err
	})
	return p, err
}

// DeleteProduct deletes a product and fires product.deleted with the
// product as it was. Its licenses (with their activations), releases (with
// their files) and trial activations go with it by cascade, firing nothing.
func (s *Service) DeleteProduct(ctx context.Context, accountID, id string) error {
	return s.change(ctx, accountID, func(tx *store.Tx) error {
		p, err := getProduct(ctx, tx, accountID, id, tx.ForUpdate())
		if err != nil {
			return err
		}
		var testData bool
		if err := tx.QueryRow(ctx, `SELECT test_data FROM products WHERE account_id = ? AND id = ?`, accountID, id).Scan(&testData); err != nil {
			return fmt.Errorf("read product: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM products WHERE account_id = ? AND id = ?`, accountID, id); err != nil {
			return fmt.Errorf("delete product: %w", err)
		}
		if testData {
			return nil
		}
		_, err = tx.Fire(ctx, accountID, event.ProductDeleted, p)
		return err
	})
}
