package filter_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/filter"
)

const payload = `{"id":"0193a1b2-0000-7000-8000-000000000001","event":"license.created","data":{"productId":"p1","expiresAt":"2026-12-01T00:00:00.000Z","allowedActivations":5,"metadata":{"plan":"pro","tags":["a","b"]},"items":[{"sku":"x","qty":2},{"sku":"y","qty":7}],"grid":[[1,2],[3]],"userId":null},"triggeredAt":"2026-11-25T10:00:00.000Z"}`

func TestMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		filter string
		want   bool
	}{
		{`{}`, true},
		{`{"data.productId": "p1"}`, true},
		{`{"data.productId": "p2"}`, false},
		{`{"event": "license.created", "data.metadata.plan": "pro"}`, true},
		{`{"event": "license.created", "data.metadata.plan": "basic"}`, false},
		{`{"data.productId": {"$in": ["p0", "p1"]}}`, true},
		{`{"data.productId": {"$nin": ["p0", "p1"]}}`, false},
		{`{"data.productId": {"$neq": "p2"}}`, true},
		{`{"data.missing": {"$neq": "p2"}}`, true},
		{`{"data.userId": {"$exists": true}}`, true},
		{`{"data.userId": null}`, true},
		{`{"data.nothing": {"$exists": false}}`, true},
		{`{"data.nothing": {"$exists": true}}`, false},
		{`{"data.allowedActivations": {"$gt": 4, "$lte": 5}}`, true},
		{`{"data.allowedActivations": {"$gte": 5.0}}`, true},
		{`{"data.allowedActivations": 5.0}`, true},
		{`{"data.allowedActivations": {"$lt": 5}}`, false},
		{`{"data.allowedActivations": {"$gt": "4"}}`, false},
		{`{"data.expiresAt": {"$lt": "2027-01-01T00:00:00.000Z"}}`, true},
		{`{"event": {"$prefix": "license."}}`, true},
		{`{"event": {"$prefix": "user."}}`, false},
		{`{"data.metadata.tags": "b"}`, true},
		{`{"data.metadata.tags": ["a", "b"]}`, true},
		{`{"data.metadata.tags.1": "b"}`, true},
		{`{"data.metadata.tags.0": "b"}`, false},
		{`{"data.items.sku": "y"}`, true},
		{`{"data.items.qty": {"$gt": 5}}`, true},
		{`{"data.items.1.sku": "x"}`, false},
		{`{"data.grid.0.1": 2}`, true},
		{`{"data.metadata": {"plan": "pro", "tags": ["a", "b"]}}`, true},
		{`{"$or": [{"event": "user.created"}, {"data.productId": "p1"}]}`, true},
		{`{"$and": [{"event": "license.created"}, {"data.productId": "p9"}]}`, false},
		{`{"$not": {"data.productId": "p1"}}`, false},
		{`{"data.productId": {"$not": {"$in": ["p2"]}}}`, true},
		{`{"triggeredAt": {"$gte": "2026-11-25T00:00:00.000Z"}}`, true},
	}
	for _, tt := range tests {
		f, err := filter.Parse([]byte(tt.filter))
		if err != nil {
			t.Fatalf("Parse(%s): %v", tt.filter, err)
		}
		if got := f.Match([]byte(payload)); got != tt.want {
			v, _ := filter.Decode([]byte(payload))
			_, why := f.Explain(v)
			t.Errorf("Match(%s) = %v; want %v\n%s", tt.filter, got, tt.want, strings.Join(why, "\n"))
		}
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	deep := `{"data.a": 1}`
	for i := 0; i <= filter.MaxDepth; i++ {
		deep = `{"$not": ` + deep + `}`
	}
	many := `{"data.a": {"$in": [` + strings.Repeat(`1,`, filter.MaxNodes) + `1]}}`
	tests := []struct {
		filter, path, operator, detail string
	}{
		{`[]`, "", "", "must be a JSON object"},
		{`{"a": 1} x`, "", "", "trailing"},
		{`{"productId": "p1"}`, "productId", "", "must start with"},
		{`{"data..x": 1}`, "data..x", "", "empty segment"},
		{`{"data.x": {"$in": "p1"}}`, "data.x", "$in", "array"},
		{`{"data.x": {"$nin": 3}}`, "data.x", "$nin", "array"},
		{`{"data.x": {"$exists": "yes"}}`, "data.x", "$exists", "true or false"},
		{`{"data.x": {"$gt": true}}`, "data.x", "$gt", "number or a string"},
		{`{"data.x": {"$prefix": 1}}`, "data.x", "$prefix", "string"},
		{`{"data.x": {"$regex": "a"}}`, "data.x", "$regex", "not an operator"},
		{`{"data.x": {"$eq": 1, "plain": 2}}`, "data.x", "", "mixes"},
		{`{"data.x": {"$not": 1}}`, "data.x", "$not", "object of operators"},
		{`{"$or": []}`, "", "$or", "non-empty array"},
		{`{"$and": [1]}`, "", "$and", "objects"},
		{`{"$not": [1]}`, "", "$not", "object"},
		{`{"$eq": 1}`, "", "$eq", "in place of a path"},
		{`{"$or": [{}]}`, "", "", "must not be empty"},
		{deep, "", "", "nest"},
		{many, "data.a", "$in", "at most"},
		{`{"data.a": "` + strings.Repeat("x", filter.MaxBytes) + `"}`, "", "", "bytes"},
	}
	for _, tt := range tests {
		_, err := filter.Parse([]byte(tt.filter))
		var fe *filter.Error
		if !errors.As(err, &fe) {
			t.Errorf("Parse(%.60s) = %v; want a *filter.Error", tt.filter, err)
			continue
		}
		if fe.Path != tt.path || fe.Operator != tt.operator || !strings.Contains(fe.Detail, tt.detail) {
			t.Errorf("Parse(%.60s) = path %q operator %q detail %q; want %q %q %q", tt.filter, fe.Path, fe.Operator, fe.Detail, tt.path, tt.operator, tt.detail)
		}
	}
}

func TestExplain(t *testing.T) {
	t.Parallel()
	f, err := filter.Parse([]byte(`{"data.productId": {"$in": ["p2"]}, "event": "license.created"}`))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := filter.Decode([]byte(payload))
	ok, why := f.Explain(v)
	if ok || len(why) != 1 || why[0] != `data.productId $in ["p2"]: fails (found "p1")` {
		t.Errorf("Explain = %v %q; want false and the failing condition", ok, why)
	}
}
