package event

//go:generate go run ./kindgen
//go:generate go generate ../openapi ../catalog

// Declaration is one event kind as kinds.yaml declares it: everything
// herald says about a kind comes from here (the catalog, the reference's
// schemas and webhooks, the client's lists, the Test action's sample).
type Declaration struct {
	Kind  Kind
	Group Group
	// Resource names the API reference's schema of the kind's data
	// (components/schemas), e.g. "License".
	Resource string
	Data     string   // what data is, in words, e.g. "License, as it was"
	Fires    string   // what fires it: one or two sentences
	Notes    []string // further paragraphs
	// Example is a payload as a receiver gets it, indented for reading,
	// its fields in the real order.
	Example string

	constName string // the Kind constant's name, e.g. "LicenseCreated"
}

// Group sorts the kinds by where they come from.
type Group string

// The groups of kinds.
const (
	// GroupSpecification: the kinds the specification names. Their
	// meaning never changes.
	GroupSpecification Group = "specification"
	// GroupLicensing: further kinds about licensing resources, which
	// users of licensing platforms expect.
	GroupLicensing Group = "licensing"
	// GroupOperational: a webhook's health changed. No API call fires
	// these; they go to the account's other webhooks that subscribe to
	// them, never to the webhook they are about.
	GroupOperational Group = "operational"
)

// SchemaName is the API reference's schema (components/schemas) of the
// kind's whole payload, e.g. "LicenseCreatedEvent" (the constant's name
// and "Event").
func (d Declaration) SchemaName() string { return d.constName + "Event" }

// Declarations returns every kind's declaration, in documentation order
// (the order of Kinds).
func Declarations() []Declaration {
	out := make([]Declaration, len(declarations))
	for i, d := range declarations {
		d.Notes = append([]string(nil), d.Notes...)
		out[i] = d
	}
	return out
}

// Declared returns k's declaration; false for an unknown kind.
func Declared(k Kind) (Declaration, bool) {
	for _, d := range declarations {
		if d.Kind == k {
			return d, true
		}
	}
	return Declaration{}, false
}
