package portal

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var staticFS embed.FS

// staticFiles serves the embedded CSS, JavaScript and icon under names that
// carry a checksum of their content (app.3f2a9c1b04.css), so browsers may
// cache them forever and a new release is fetched at once.
type staticFiles struct {
	urls  map[string]string // app.css → /static/app.3f2a9c1b04.css
	files map[string]asset  // app.3f2a9c1b04.css → content
}

type asset struct {
	body  []byte
	ctype string
}

func mustLoadStatic() *staticFiles {
	s := &staticFiles{urls: map[string]string{}, files: map[string]asset{}}
	err := fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := staticFS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		name := path.Base(p)
		ext := path.Ext(name)
		versioned := strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:5]) + ext
		s.urls[name] = "/static/" + versioned
		s.files[versioned] = asset{body: body, ctype: mime.TypeByExtension(ext)}
		return nil
	})
	if err != nil {
		panic(err)
	}
	return s
}

// url returns the checksummed URL of a static file; templates call it.
func (s *staticFiles) url(name string) (string, error) {
	u, ok := s.urls[name]
	if !ok {
		return "", fs.ErrNotExist
	}
	return u, nil
}

func (s *staticFiles) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a, ok := s.files[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", a.ctype)
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	w.Write(a.body)
}
