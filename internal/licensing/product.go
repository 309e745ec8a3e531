package licensing

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// Product is something licenses are sold for.
type Product struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Metadata  map[string]any `json:"metadata"`
	CreatedAt time.Time      `json:"-"`
	UpdatedAt time.Time      `json:"-"`
}

// ProductInput creates a product.
type ProductInput struct {
	Name     *string        `json:"name"`
	Metadata map[string]any `json:"metadata"`
}

// CreateProduct creates a product and fires product.created.
func (s *Service) CreateProduct(ctx context.Context, accountID string, in ProductInput) (Product, error) {
	var v InvalidError
	name := ""
	if in.Name == nil {
		v.add("name", "is required")
	} else if name = strings.TrimSpace(*in.Name); name == "" || utf8.RuneCountInString(name) > 200 {
		v.add("name", "must be 1 to 200 characters")
	}
	if err := v.err(); err != nil {
		return Product{}, err
	}
	if in.Metadata == nil {
		in.Metadata = map[string]any{}
	}
	meta, err := json.Marshal(in.Metadata)
	if err != nil {
		return Product{}, InvalidError{{"metadata", "must be a JSON object"}}
	}
	var p Product
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		p = Product{ID: store.NewID(), Name: name, Metadata: in.Metadata, CreatedAt: store.FromMS(store.MS(now)), UpdatedAt: store.FromMS(store.MS(now))}
		if _, err := tx.Exec(ctx, `INSERT INTO products (id, account_id, name, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
			p.ID, accountID, p.Name, string(meta), store.MS(now), store.MS(now)); err != nil {
			return fmt.Errorf("insert product: %w", err)
		}
		_, err := tx.Fire(ctx, accountID, event.ProductCreated, p.View())
		return err
	})
	return p, err
}

// Product returns one product.
func (s *Service) Product(ctx context.Context, accountID, id string) (Product, error) {
	var p Product
	var meta string
	var c, u int64
	err := s.store.QueryRow(ctx, `SELECT id, name, metadata, created_at, updated_at FROM products WHERE account_id = ? AND id = ?`, accountID, id).
		Scan(&p.ID, &p.Name, &meta, &c, &u)
	if errors.Is(err, sql.ErrNoRows) {
		return Product{}, notFound("product")
	}
	if err != nil {
		return Product{}, fmt.Errorf("read product: %w", err)
	}
	json.Unmarshal([]byte(meta), &p.Metadata)
	p.CreatedAt, p.UpdatedAt = store.FromMS(c), store.FromMS(u)
	return p, nil
}

// View is the product as the API returns it and events carry it.
func (p Product) View() map[string]any {
	return map[string]any{
		"id": p.ID, "name": p.Name, "metadata": p.Metadata,
		"createdAt": p.CreatedAt.UTC().Format(event.TimeFormat), "updatedAt": p.UpdatedAt.UTC().Format(event.TimeFormat),
	}
}
