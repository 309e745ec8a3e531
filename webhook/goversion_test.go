package webhook_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	gotoken "go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestGoLineIsTheLowest holds go.mod's go line to the lowest release the
// package and its tests build with: at that release they type-check and use
// no standard-library symbol added later, and a release earlier they do not.
// A receiver's go.mod is raised to this line by go mod tidy, so it must not
// be higher than needed; go vet's stdversion check cannot hold it, as it
// reports nothing for a module below go 1.21.
func TestGoLineIsTheLowest(t *testing.T) {
	minor := goLineMinor(t)
	api := newerSymbols(t)
	std := stdImporter(t)
	for _, tc := range []struct {
		minor int
		fits  bool
	}{
		{minor, true},
		{minor - 1, false},
	} {
		problems := checkAt(t, tc.minor, api, std)
		switch {
		case tc.fits && len(problems) > 0:
			t.Errorf("at go 1.%d: %s; want none (raise the go line)", tc.minor, strings.Join(problems, "; "))
		case !tc.fits && len(problems) == 0:
			t.Errorf("at go 1.%d: no problem; want one (lower the go line to 1.%d)", tc.minor, tc.minor)
		default:
			t.Logf("at go 1.%d: %d problems %q", tc.minor, len(problems), problems)
		}
	}
}

// goLineMinor returns the minor release of go.mod's go line: 19 for go 1.19.
func goLineMinor(t *testing.T) int {
	t.Helper()
	f, err := os.Open("go.mod")
	if err != nil {
		t.Fatalf("read the go line: %v", err)
	}
	defer f.Close()
	for s := bufio.NewScanner(f); s.Scan(); {
		if v, ok := cutPrefix(strings.TrimSpace(s.Text()), "go 1."); ok {
			minor, _, _ := strings.Cut(v, ".")
			n, err := strconv.Atoi(minor)
			if err != nil {
				t.Fatalf("go.mod's go line 1.%s: %v", v, err)
			}
			return n
		}
	}
	t.Fatal("go.mod has no go line")
	return 0
}

// newerSymbols maps each standard-library name in the Go distribution's API
// listings ($GOROOT/api/go1.N.txt, "pkg net/http, type MaxBytesError struct")
// to the minor release that added it, keyed as symbolKey keys a use.
func newerSymbols(t *testing.T) map[string]int {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("find GOROOT: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "api", "go1.*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the Go distribution's API listings: %d files (%v); want api/go1.N.txt", len(files), err)
	}
	added := make(map[string]int)
	for _, file := range files {
		minor, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "go1."), ".txt"))
		if err != nil {
			t.Fatalf("API listing %s: %v", file, err)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("read API listing: %v", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			key := listingKey(line)
			if first, ok := added[key]; key != "" && (!ok || minor < first) {
				added[key] = minor
			}
		}
	}
	return added
}

// listingKey turns an API-listing line into the key of the name it adds:
//
//	pkg net/http, func MaxBytesReader(ResponseWriter, io.ReadCloser, int64) io.ReadCloser  →  net/http.MaxBytesReader
//	pkg net/http, method (*MaxBytesError) Error() string                                   →  net/http.MaxBytesError.Error
//	pkg net/http, type MaxBytesError struct, Limit int64                                    →  net/http.MaxBytesError.Limit
//	pkg net/http, type MaxBytesError struct                                                 →  net/http.MaxBytesError
//
// and likewise for interface methods, constants and variables.
func listingKey(line string) string {
	rest, ok := cutPrefix(line, "pkg ")
	if !ok {
		return ""
	}
	pkg, decl, ok := strings.Cut(rest, ", ")
	if !ok || strings.Contains(pkg, " ") { // "pkg syscall (linux-386), …": one platform's
		return ""
	}
	kind, decl, _ := strings.Cut(decl, " ")
	switch kind {
	case "func", "const", "var":
		return pkg + "." + name(decl)
	case "method": // (*T) Name(…) or (T[$0]) Name(…)
		recv, method, _ := strings.Cut(strings.TrimPrefix(decl, "("), ") ")
		return pkg + "." + name(strings.TrimPrefix(recv, "*")) + "." + name(method)
	case "type": // T struct, Field type; T interface, Method(…); T …
		typ, member, hasMember := strings.Cut(decl, ", ")
		if hasMember {
			return pkg + "." + name(typ) + "." + name(member)
		}
		return pkg + "." + name(typ)
	}
	return ""
}

// name returns the identifier s starts with.
func name(s string) string {
	if i := strings.IndexAny(s, " ([=,"); i >= 0 {
		return s[:i]
	}
	return s
}

// checkAt type-checks the package and its external tests as Go 1.minor and
// returns what does not fit: a type error (a language feature too new) or a
// standard-library symbol added after 1.minor.
func checkAt(t *testing.T, minor int, added map[string]int, std types.Importer) []string {
	t.Helper()
	fset := gotoken.NewFileSet()
	byPackage := make(map[string][]*ast.File)
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatalf("list sources: %v", err)
	}
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		byPackage[f.Name.Name] = append(byPackage[f.Name.Name], f)
	}

	var problems []string
	info := &types.Info{
		Types:      make(map[ast.Expr]types.TypeAndValue),
		Uses:       make(map[*ast.Ident]types.Object),
		Selections: make(map[*ast.SelectorExpr]*types.Selection),
	}
	var pkg *types.Package
	conf := types.Config{
		GoVersion: fmt.Sprintf("go1.%d", minor),
		Importer: importerFunc(func(path string) (*types.Package, error) {
			if path == "github.com/heraldhq/herald/webhook" {
				return pkg, nil
			}
			return std.Import(path)
		}),
		Error: func(err error) { problems = append(problems, err.Error()) },
	}
	// The package first: the external tests import it.
	for _, name := range []string{"webhook", "webhook_test"} {
		checked, _ := conf.Check(name, fset, byPackage[name], info) // errors went to conf.Error
		if name == "webhook" {
			pkg = checked
		}
	}

	reported := make(map[string]bool) // a method is both a use and a selection
	newer := func(id *ast.Ident, obj types.Object, recv types.Type) {
		key := symbolKey(obj, recv)
		problem := fmt.Sprintf("%s: %s is go 1.%d", fset.Position(id.Pos()), key, added[key])
		if added[key] > minor && !reported[problem] {
			reported[problem] = true
			problems = append(problems, problem)
		}
	}
	for id, obj := range info.Uses {
		newer(id, obj, nil)
	}
	for sel, s := range info.Selections {
		newer(sel.Sel, s.Obj(), s.Recv())
	}
	// A field named in a composite literal is neither: its struct is the
	// literal's type.
	for _, files := range byPackage {
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.CompositeLit); ok {
					for _, elt := range lit.Elts {
						if kv, ok := elt.(*ast.KeyValueExpr); ok {
							if id, ok := kv.Key.(*ast.Ident); ok && info.Uses[id] != nil {
								newer(id, info.Uses[id], info.TypeOf(lit))
							}
						}
					}
				}
				return true
			})
		}
	}
	sort.Strings(problems)
	return problems
}

// symbolKey returns the key of listingKey for a use of obj reached through
// recv (the selection's receiver, or nil), or "" when obj is not a
// standard-library name: a builtin (the type checker holds those), a local
// or a name of this module.
func symbolKey(obj types.Object, recv types.Type) string {
	if obj.Pkg() == nil || strings.Contains(strings.Split(obj.Pkg().Path(), "/")[0], ".") {
		return ""
	}
	prefix := obj.Pkg().Path() + "."
	switch obj := obj.(type) {
	case *types.Func:
		if r := obj.Type().(*types.Signature).Recv(); r != nil {
			return prefix + typeName(r.Type()) + "." + obj.Name()
		}
	case *types.Var:
		if obj.IsField() {
			if recv == nil {
				return "" // a use without its struct; checkAt passes the struct too
			}
			return prefix + typeName(recv) + "." + obj.Name()
		}
		if obj.Parent() != obj.Pkg().Scope() {
			return ""
		}
	}
	return prefix + obj.Name()
}

// typeName returns the name of the (pointed-to) named type t, or "".
func typeName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name()
	}
	return ""
}

// stdImporter imports the standard library from the export data go list
// reports for this package's and its tests' dependencies: one go command
// rather than one per package, as importer.Default runs.
func stdImporter(t *testing.T) types.Importer {
	t.Helper()
	out, err := exec.Command("go", "list", "-export", "-deps", "-test", "-f", "{{.ImportPath}} {{.Export}}", ".").Output()
	if err != nil {
		t.Fatalf("list export data: %v", err)
	}
	exports := make(map[string]string)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, file, ok := strings.Cut(line, " "); ok && file != "" {
			exports[path] = file
		}
	}
	return importer.ForCompiler(gotoken.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// cutPrefix is strings.CutPrefix, which is newer than this module's go line.
func cutPrefix(s, prefix string) (string, bool) {
	if !strings.HasPrefix(s, prefix) {
		return s, false
	}
	return s[len(prefix):], true
}
