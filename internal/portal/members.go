package portal

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

// InvitationTTL is how long an invitation link works.
const InvitationTTL = 7 * 24 * time.Hour

type membersData struct {
	Users       []store.Person
	Invitations []store.Link
	Me          string // the signed-in user's id
	IsOwner     bool
	// The invitation form's values, and what is wrong with them.
	Email, Role string
	Errors      fieldErrors
	// Error is why a change of roles or people was refused.
	Error string
	// Invited is the link just made, shown this once: herald keeps only
	// its hash.
	Invited    *store.Link
	InviteLink string
}

// members lists the account's people and pending invitations; owners also
// get the forms that invite, change roles and remove. An invitation just
// made (with its link), a refused form or a refused change arrives as a
// flash.
func (h *handler) members(w http.ResponseWriter, r *http.Request, s store.Session) error {
	d := membersData{Role: string(store.RoleMember)}
	f := flashFrom(r.Context())
	if f.Form != nil {
		d.Email, d.Errors = f.Form.Get("email"), f.Errors
		if role := f.Form.Get("role"); role != "" {
			d.Role = role
		}
	}
	d.Error, d.Invited, d.InviteLink = f.Error, f.Invited, f.Secret
	return h.renderMembers(w, r, s, http.StatusOK, d)
}

func (h *handler) renderMembers(w http.ResponseWriter, r *http.Request, s store.Session, status int, d membersData) error {
	users, err := h.store.People(r.Context(), s.AccountID)
	if err != nil {
		return err
	}
	invs, err := h.store.Invitations(r.Context(), s.AccountID)
	if err != nil {
		return err
	}
	d.Users, d.Invitations, d.Me, d.IsOwner = users, invs, s.OwnerID, s.OwnerRole == store.RoleOwner
	return h.render(w, r, status, "members", d)
}

// ownersOnly refuses a change to the account's people from a member.
func ownersOnly(s store.Session) error {
	if s.OwnerRole != store.RoleOwner {
		return &httpError{Code: http.StatusForbidden, Msg: "Only the account's owners manage its people."}
	}
	return nil
}

// invite makes an invitation and shows its link once, for the owner to
// send: herald keeps only its hash. The link crosses the redirect in a
// flash sealed for this browser's session (never a URL), like a new API
// token's secret.
func (h *handler) invite(w http.ResponseWriter, r *http.Request, s store.Session) error {
	if err := ownersOnly(s); err != nil {
		return err
	}
	d := membersData{Email: r.PostForm.Get("email"), Role: r.PostForm.Get("role")}
	var v validator.Errors
	validator.CheckEmail(&v, "email", &d.Email)
	if !store.Role(d.Role).Valid() {
		v.Add("role", "must be owner or member")
	}
	if d.Errors = fromValidator(v); len(d.Errors) > 0 {
		return h.refused(w, r, "/account/members", d.Errors)
	}
	token := auth.NewLinkToken()
	l, err := h.store.CreateLink(r.Context(), s.AccountID, store.NewLink{Kind: store.LinkInvitation, Email: d.Email,
		Role: store.Role(d.Role), Hash: auth.HashToken(token), ExpiresAt: h.now().Add(InvitationTTL)})
	if errors.Is(err, store.ErrConflict) {
		d.Errors.add("email", d.Email+" already signs in to herald; an address belongs to one account.")
		return h.redirectWith(w, r, "/account/members", flash{Status: http.StatusConflict, Form: typed(r.PostForm), Errors: d.Errors})
	}
	if err != nil {
		return err
	}
	link := h.baseURL(r) + "/invitation?token=" + token
	return h.redirectWith(w, r, "/account/members", flash{Invited: &l, Secret: link})
}

// setRole makes a user an owner or a member; the last owner stays one.
func (h *handler) setRole(w http.ResponseWriter, r *http.Request, s store.Session) error {
	if err := ownersOnly(s); err != nil {
		return err
	}
	role := store.Role(r.PostForm.Get("role"))
	if !role.Valid() {
		return h.peopleRefused(w, r, http.StatusUnprocessableEntity, "A role is owner or member. Nothing was changed.")
	}
	return h.peopleChanged(w, r, h.store.SetRole(r.Context(), s.AccountID, r.PathValue("id"), role), "Role changed.")
}

// removeUser removes a user and their sessions; the last owner stays.
func (h *handler) removeUser(w http.ResponseWriter, r *http.Request, s store.Session) error {
	if err := ownersOnly(s); err != nil {
		return err
	}
	revoked, err := h.store.RemovePerson(r.Context(), s.AccountID, r.PathValue("id"))
	done := "Removed from the account, and signed out everywhere."
	switch revoked {
	case 0:
	case 1:
		done += " The API token they made is revoked."
	default:
		done += fmt.Sprintf(" The %d API tokens they made are revoked.", revoked)
	}
	return h.peopleChanged(w, r, err, done)
}

// revokeInvitation withdraws an invitation before it is used.
func (h *handler) revokeInvitation(w http.ResponseWriter, r *http.Request, s store.Session) error {
	if err := ownersOnly(s); err != nil {
		return err
	}
	return h.peopleChanged(w, r, h.store.RevokeInvitation(r.Context(), s.AccountID, r.PathValue("id")), "Invitation withdrawn: its link no longer works.")
}

// peopleChanged answers a change of the account's people: back to the
// people page with what was done, or why nothing was. A person of another
// account (or one removed meanwhile) is not found, as elsewhere.
func (h *handler) peopleChanged(w http.ResponseWriter, r *http.Request, err error, done string) error {
	switch {
	case errors.Is(err, store.ErrLastOwner):
		return h.peopleRefused(w, r, http.StatusConflict, "An account keeps at least one owner: make someone else an owner first. Nothing was changed.")
	case errors.Is(err, store.ErrNotFound):
		return &httpError{Code: http.StatusNotFound, Msg: "No such person in this account."}
	case err != nil:
		return err
	}
	return h.redirectWith(w, r, "/account/members", flash{Notice: done})
}

// peopleRefused shows the people page again, answering code, with why a
// change was refused (post/redirect/get, like every form).
func (h *handler) peopleRefused(w http.ResponseWriter, r *http.Request, code int, msg string) error {
	return h.redirectWith(w, r, "/account/members", flash{Status: code, Error: msg})
}

// baseURL is the portal's address for links: Config.PublicURL, else the
// address this request came to.
func (h *handler) baseURL(r *http.Request) string {
	if h.publicURL != "" {
		return strings.TrimRight(h.publicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
