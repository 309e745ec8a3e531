package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/client"
)

// The licensing resources (products, users, licenses, activations,
// releases, trial activations) are nouns alike: list, get, create, update,
// delete, and a few verbs of their own. Their fields are the reference's
// (docs: the API reference's ProductCreate, LicenseCreate…), given as JSON
// with --data, so that every field the API takes is reachable without a
// flag for each; the answer is printed as the API gave it.

// resource is one licensing resource's calls.
type resource struct {
	noun, path, about string
	// singular names one in help: "product".
	singular string
	// columns are the fields a list's table shows, after id.
	columns []string
	// filters are a list's query parameters, by flag: --product productId.
	filters [][2]string
	// update says whether it has PATCH /path/{id}.
	update bool
	extra  []verb
}

var resources = []resource{
	{noun: "products", path: "/v3/products", singular: "product", about: "Products: what licenses are issued for. Each change fires its product.* event.",
		columns: []string{"name", "createdAt"}, update: true},
	{noun: "users", path: "/v3/users", singular: "user", about: "Users: the licensees. Each change fires its user.* event.",
		columns: []string{"email", "name", "createdAt"}, update: true},
	{noun: "licenses", path: "/v3/licenses", singular: "license", about: "Licenses of a product. Each change fires its license.* event.",
		columns: []string{"key", "productId", "userId", "expiresAt"}, filters: [][2]string{{"product", "productId"}, {"user", "userId"}}, update: true,
		extra: []verb{
			{name: "renew", args: []string{"ID"}, op: "POST /v3/licenses/{id}/renew", about: "extend a license by its validity (license.renewed)", setup: licenseRenew},
			{name: "set-expiry", args: []string{"ID"}, op: "PATCH /v3/licenses/{id}/expires-at", about: "set when a license expires (license.expiresAt.updated)", setup: licenseSetExpiry},
		}},
	{noun: "activations", path: "/v3/activations", singular: "activation", about: "Activations: a license in use on one machine. Each change fires its activation.* event.",
		columns: []string{"licenseId", "fingerprint", "createdAt"}, filters: [][2]string{{"license", "licenseId"}}},
	{noun: "releases", path: "/v3/releases", singular: "release", about: "Releases: the versions of a product, with their files. Each change fires its release.* event.",
		columns: []string{"productId", "version", "createdAt"}, filters: [][2]string{{"product", "productId"}},
		extra: []verb{
			{name: "add-file", args: []string{"ID"}, op: "POST /v3/releases/{id}/files", about: "record a file of a release (fires no event)", setup: releaseAddFile},
			{name: "delete-file", args: []string{"ID", "FILE_ID"}, op: "DELETE /v3/releases/{id}/files/{fileId}", about: "remove a file from a release (fires no event)", setup: releaseDeleteFile},
		}},
	{noun: "trial-activations", path: "/v3/trial-activations", singular: "trial activation", about: "Trial activations: a product tried on one machine. Each change fires its trial-activation.* event.",
		columns: []string{"productId", "fingerprint", "createdAt"}, filters: [][2]string{{"product", "productId"}}},
}

// nounOf makes a resource's noun.
func (r resource) nounOf() noun {
	n := noun{name: r.noun, about: r.about + "\nIts fields are the API reference's; --data takes them as JSON, or @FILE."}
	n.verbs = append(n.verbs,
		verb{name: "list", op: "GET " + r.path, about: "list the " + r.noun + ", newest first, a page at a time", setup: r.list},
		verb{name: "get", args: []string{"ID"}, op: "GET " + r.path + "/{id}", about: "show one " + r.singular, setup: r.get},
		verb{name: "create", op: "POST " + r.path, about: "create a " + r.singular + " from --data", setup: r.create},
	)
	if r.update {
		n.verbs = append(n.verbs, verb{name: "update", args: []string{"ID"}, op: "PATCH " + r.path + "/{id}", about: "change the fields --data gives", setup: r.change})
	}
	n.verbs = append(n.verbs, verb{name: "delete", args: []string{"ID"}, op: "DELETE " + r.path + "/{id}", about: "delete a " + r.singular, setup: r.remove})
	n.verbs = append(n.verbs, r.extra...)
	return n
}

func (r resource) list(e *envFlags) func(x *call) error {
	limit := e.fs.Int("limit", 50, "how many, at most 500")
	cursor := e.fs.String("cursor", "", "the page after the one that printed this cursor")
	filters := make([]*string, len(r.filters))
	for i, f := range r.filters {
		filters[i] = e.fs.String(f[0], "", "only those of this "+f[0]+" (its id)")
	}
	return func(x *call) error {
		q := url.Values{}
		q.Set("limit", strconv.Itoa(*limit))
		if *cursor != "" {
			q.Set("cursor", *cursor)
		}
		line := "herald " + r.noun + " list"
		for i, f := range r.filters {
			if *filters[i] != "" {
				q.Set(f[1], *filters[i])
				line += " --" + f[0] + " " + *filters[i]
			}
		}
		raw, err := x.c.Raw(x.ctx, http.MethodGet, r.path, q, nil)
		if err != nil {
			return err
		}
		x.answer = raw
		var page struct {
			Data       []map[string]any `json:"data"`
			NextCursor string           `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return fmt.Errorf("read the list of %s: %w", r.noun, err)
		}
		err = x.show(func(tw *tabwriter.Writer) {
			head := []string{"ID"}
			for _, c := range r.columns {
				head = append(head, strings.ToUpper(c))
			}
			fmt.Fprintln(tw, strings.Join(head, "\t"))
			for _, item := range page.Data {
				row := []string{cell(item["id"])}
				for _, c := range r.columns {
					row = append(row, cell(item[c]))
				}
				fmt.Fprintln(tw, strings.Join(row, "\t"))
			}
		})
		x.more(page.NextCursor, line)
		return err
	}
}

// cell writes a field of a list's row: — for none.
func cell(v any) string {
	switch v := v.(type) {
	case nil:
		return "—"
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func (r resource) get(e *envFlags) func(x *call) error {
	return func(x *call) error { return x.raw(http.MethodGet, r.path+"/"+url.PathEscape(x.pos[0]), nil) }
}

func (r resource) create(e *envFlags) func(x *call) error {
	data := dataFlag(e, "the "+r.singular+"'s fields as JSON, such as the API reference's "+schemaName(r.singular)+"Create, or @FILE (required)", true)
	return func(x *call) error { return x.raw(http.MethodPost, r.path, *data) }
}

func (r resource) change(e *envFlags) func(x *call) error {
	data := dataFlag(e, "the fields to change as JSON, such as the API reference's "+schemaName(r.singular)+"Update, or @FILE (required)", true)
	return func(x *call) error { return x.raw(http.MethodPatch, r.path+"/"+url.PathEscape(x.pos[0]), *data) }
}

func (r resource) remove(e *envFlags) func(x *call) error {
	return func(x *call) error {
		if _, err := x.c.Raw(x.ctx, http.MethodDelete, r.path+"/"+url.PathEscape(x.pos[0]), nil, nil); err != nil {
			return err
		}
		if !x.json {
			fmt.Fprintf(x.out, "deleted %s %s\n", r.singular, x.pos[0])
		}
		return nil
	}
}

func licenseRenew(e *envFlags) func(x *call) error {
	return func(x *call) error {
		return x.raw(http.MethodPost, "/v3/licenses/"+url.PathEscape(x.pos[0])+"/renew", nil)
	}
}

func licenseSetExpiry(e *envFlags) func(x *call) error {
	at := e.fs.String("expires-at", "", "the new expiry, RFC 3339, such as 2027-01-02T15:04:05Z (required)")
	var body json.RawMessage
	e.check(func() error {
		const cmd = "herald licenses set-expiry"
		if err := required(cmd, "expires-at", *at); err != nil {
			return err
		}
		t, err := time.Parse(time.RFC3339, *at)
		if err != nil {
			return usageError{cmd, fmt.Errorf("--expires-at %q: want a time such as 2027-01-02T15:04:05Z", *at)}
		}
		body, _ = json.Marshal(map[string]string{"expiresAt": t.UTC().Format("2006-01-02T15:04:05.000Z")})
		return nil
	})
	return func(x *call) error {
		return x.raw(http.MethodPatch, "/v3/licenses/"+url.PathEscape(x.pos[0])+"/expires-at", body)
	}
}

func releaseAddFile(e *envFlags) func(x *call) error {
	data := dataFlag(e, "the file's fields as JSON, such as the API reference's ReleaseFileCreate, or @FILE (required)", true)
	return func(x *call) error {
		return x.raw(http.MethodPost, "/v3/releases/"+url.PathEscape(x.pos[0])+"/files", *data)
	}
}

func releaseDeleteFile(e *envFlags) func(x *call) error {
	return func(x *call) error {
		if _, err := x.c.Raw(x.ctx, http.MethodDelete, "/v3/releases/"+url.PathEscape(x.pos[0])+"/files/"+url.PathEscape(x.pos[1]), nil, nil); err != nil {
			return err
		}
		if !x.json {
			fmt.Fprintf(x.out, "removed file %s from release %s\n", x.pos[1], x.pos[0])
		}
		return nil
	}
}

// dataFlag registers --data, read as JSON (or @FILE) before any call.
func dataFlag(e *envFlags, help string, need bool) *json.RawMessage {
	text := e.fs.String("data", "", help)
	out := new(json.RawMessage)
	e.check(func() error {
		name := e.fs.Name()
		if need {
			if err := required(name, "data", *text); err != nil {
				return err
			}
		}
		var err error
		*out, err = jsonFlag(name, "data", *text, true)
		return err
	})
	return out
}

// raw makes a call whose answer is one resource and prints it as the API
// gave it, indented: the licensing resources' fields are the events' data,
// which docs/events.md describes.
func (x *call) raw(method, path string, body json.RawMessage) error {
	answer, err := x.c.Raw(x.ctx, method, path, nil, body)
	if err != nil {
		return err
	}
	x.answer = answer
	return x.printAnswer()
}

// schemaName is the reference's name of a resource: "trial activation" is
// TrialActivation.
func schemaName(singular string) string {
	var b strings.Builder
	for w := range strings.FieldsSeq(singular) {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}

var accountNoun = noun{name: "account", about: "The account of the API token: its name, where herald's emails go, and the expiring-soon lead time.", verbs: []verb{
	{name: "show", op: "GET /v3/account", about: "show the account's settings", setup: accountShow},
	{name: "update", op: "PATCH /v3/account", about: "change the account's name, notification email or expiring-soon lead time", setup: accountUpdate},
}}

func printAccount(x *call, a client.Account) error {
	return x.show(func(tw *tabwriter.Writer) {
		for _, row := range [][2]string{
			{"ID", a.ID}, {"Name", a.Name}, {"Notification email", a.NotificationEmail},
			{"Expiring-soon lead", shortDuration(time.Duration(a.ExpiringSoonLeadSeconds) * time.Second)},
			{"Created", a.CreatedAt.Format(time.RFC3339)}, {"Updated", a.UpdatedAt.Format(time.RFC3339)},
		} {
			fmt.Fprintf(tw, "%s:\t%s\n", row[0], row[1])
		}
	})
}

func accountShow(e *envFlags) func(x *call) error {
	return func(x *call) error {
		a, err := x.c.Account(x.ctx)
		if err != nil {
			return err
		}
		return printAccount(x, a)
	}
}

func accountUpdate(e *envFlags) func(x *call) error {
	name := e.fs.String("name", "", "a new name")
	notify := e.fs.String("notification-email", "", "where herald writes when a webhook turns Unhealthy or is suspended")
	lead := e.fs.Duration("expiring-soon-lead", 0, "how long before a license expires license.expiring-soon fires, such as 168h, 1h to 2160h")
	var in client.AccountUpdate
	e.check(func() error {
		e.fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "name":
				in.Name = name
			case "notification-email":
				in.NotificationEmail = notify
			case "expiring-soon-lead":
				s := int64(*lead / time.Second)
				in.ExpiringSoonLeadSeconds = &s
			}
		})
		if in.Name == nil && in.NotificationEmail == nil && in.ExpiringSoonLeadSeconds == nil {
			return usageError{"herald account update", errors.New("nothing to change: pass --name, --notification-email or --expiring-soon-lead")}
		}
		return nil
	})
	return func(x *call) error {
		a, err := x.c.UpdateAccount(x.ctx, in)
		if err != nil {
			return err
		}
		return printAccount(x, a)
	}
}

var eventTypesNoun = noun{name: "event-types", about: "The event kinds a webhook may subscribe to, and each one's payload schema. Needs no API token.", verbs: []verb{
	{name: "list", op: "GET /v3/event-types", public: true, about: "list the event kinds with what fires each", setup: eventTypesList},
	{name: "schema", args: []string{"KIND"}, op: "GET /v3/event-types/{kind}/schema", public: true, about: "print the JSON Schema of a kind's payload", setup: eventTypeSchema},
}}

func eventTypesList(e *envFlags) func(x *call) error {
	return func(x *call) error {
		kinds, err := x.c.EventTypes(x.ctx)
		if err != nil {
			return err
		}
		return x.show(func(tw *tabwriter.Writer) {
			fmt.Fprintln(tw, "KIND\tGROUP\tFIRES WHEN")
			for _, k := range kinds {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", k.Kind, k.Group, k.Description)
			}
		})
	}
}

func eventTypeSchema(e *envFlags) func(x *call) error {
	return func(x *call) error {
		if _, err := x.c.EventTypeSchema(x.ctx, x.pos[0]); err != nil {
			return err
		}
		return x.printAnswer()
	}
}
