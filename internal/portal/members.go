package portal

import (
	"errors"
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
	Users       []store.Owner
	Invitations []store.Link
	Me          string // the signed-in user's id
	IsOwner     bool
	// The invitation form's values, and what is wrong with them.
	Email, Role string
	Errors      fieldErrors
	// Invited is the link just made, shown this once: herald keeps only
	// its hash.
	Invited    *store.Link
	InviteLink string
}

// members lists the account's people and pending invitations; owners also
// get the forms that invite, change roles and remove.
func (h *handler) members(w http.ResponseWriter, r *http.Request, s store.Session) error {
	return h.renderMembers(w, r, s, http.StatusOK, membersData{Role: string(store.RoleMember)})
}

func (h *handler) renderMembers(w http.ResponseWriter, r *http.Request, s store.Session, status int, d membersData) error {
	users, err := h.store.Users(r.Context(), s.AccountID)
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
// send: herald keeps only its hash.
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
		return h.renderMembers(w, r, s, http.StatusUnprocessableEntity, d)
	}
	token := auth.NewLinkToken()
	l, err := h.store.CreateLink(r.Context(), s.AccountID, store.NewLink{Kind: store.LinkInvitation, Email: d.Email,
		Role: store.Role(d.Role), Hash: auth.HashToken(token), ExpiresAt: h.now().Add(InvitationTTL)})
	if errors.Is(err, store.ErrConflict) {
		d.Errors.add("email", d.Email+" already signs in to herald; an address belongs to one account.")
		return h.renderMembers(w, r, s, http.StatusConflict, d)
	}
	if err != nil {
		return err
	}
	link := h.baseURL(r) + "/invitation?token=" + token
	return h.renderMembers(w, r, s, http.StatusCreated, membersData{Role: string(store.RoleMember), Invited: &l, InviteLink: link})
}

// setRole makes a user an owner or a member; the last owner stays one.
func (h *handler) setRole(w http.ResponseWriter, r *http.Request, s store.Session) error {
	if err := ownersOnly(s); err != nil {
		return err
	}
	role := store.Role(r.PostForm.Get("role"))
	if !role.Valid() {
		return &httpError{Code: http.StatusUnprocessableEntity, Msg: "A role is owner or member."}
	}
	return h.peopleChanged(w, r, h.store.SetRole(r.Context(), s.AccountID, r.PathValue("id"), role), "role")
}

// removeUser removes a user and their sessions; the last owner stays.
func (h *handler) removeUser(w http.ResponseWriter, r *http.Request, s store.Session) error {
	if err := ownersOnly(s); err != nil {
		return err
	}
	return h.peopleChanged(w, r, h.store.RemoveUser(r.Context(), s.AccountID, r.PathValue("id")), "removed")
}

// revokeInvitation withdraws an invitation before it is used.
func (h *handler) revokeInvitation(w http.ResponseWriter, r *http.Request, s store.Session) error {
	if err := ownersOnly(s); err != nil {
		return err
	}
	return h.peopleChanged(w, r, h.store.RevokeInvitation(r.Context(), s.AccountID, r.PathValue("id")), "invitation-revoked")
}

func (h *handler) peopleChanged(w http.ResponseWriter, r *http.Request, err error, done string) error {
	switch {
	case errors.Is(err, store.ErrLastOwner):
		return &httpError{Code: http.StatusConflict, Msg: "An account keeps at least one owner: make someone else an owner first."}
	case errors.Is(err, store.ErrNotFound):
		return &httpError{Code: http.StatusNotFound, Msg: "No such person in this account."}
	case err != nil:
		return err
	}
	return redirect(w, r, "/account/members?done="+done)
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
