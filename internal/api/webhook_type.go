package api

import "github.com/heraldhq/herald/internal/store"

// checkType reads the type sent: http (the default) or pull, chosen when
// a webhook is made; a pull webhook has no url (decision 0140).
func (in *webhookInput) checkType(v *Invalid, create bool) {
	in.typ = in.storedType
	if in.Type != nil {
		switch t := *in.Type; {
		case t != store.TypeHTTP && t != store.TypePull:
			v.Add("type", `must be "http" or "pull"`)
		case create:
			in.typ = t
		case t != typeOr(in.storedType):
			v.Add("type", "is "+typeOr(in.storedType)+" and cannot change; make a new webhook of type "+t)
		}
	}
	if in.typ == store.TypePull && in.URL != nil {
		v.Add("url", "a pull webhook has no url: its consumer reads its events (GET /v3/webhooks/{id}/events)")
	}
}

// url is a new webhook's url: none for a pull webhook.
func (in *webhookInput) url() string {
	if in.typ == store.TypePull || in.URL == nil {
		return ""
	}
	return *in.URL
}

// typeOr names a type, "" as http.
func typeOr(typ string) string {
	if typ == "" {
		return store.TypeHTTP
	}
	return typ
}
