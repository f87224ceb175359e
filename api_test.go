package retry

import (
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"slices"
	"strings"
	"testing"
)

var updateAPI = flag.Bool("update-api", false, "rewrite testdata/api.txt with the package's exported API")

const (
	apiGolden = "testdata/api.txt"
	apiUpdate = "go test -run '^TestAPI$' -update-api ."
)

// TestAPI compares the exported API, every exported name with its
// signature, with testdata/api.txt, so that no exported change is made by
// accident. After a deliberate change, run
//
//	go test -run '^TestAPI$' -update-api .
//
// and commit testdata/api.txt with the change and a CHANGELOG.md entry.
func TestAPI(t *testing.T) {
	got := exportedAPI(t)
	if *updateAPI {
		if err := os.WriteFile(apiGolden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", apiGolden)
	}
	b, err := os.ReadFile(apiGolden)
	if err != nil {
		t.Fatalf("%v\nTo create it, run: %s", err, apiUpdate)
	}
	want := strings.ReplaceAll(string(b), "\r\n", "\n") // a Windows checkout may add \r
	if got != want {
		t.Errorf("the exported API differs from %s (- in the file, + in the code):\n%s\n"+
			"If the change is deliberate, run\n\t%s\n"+
			"and commit %s with the change and an entry in CHANGELOG.md.",
			apiGolden, lineDiff(want, got), apiUpdate, apiGolden)
	}
}

// exportedAPI type-checks the package's non-test files and lists every
// exported name, one per line, sorted: constants with their values,
// variables, functions, and types with their definitions, exported fields,
// interface methods and methods.
func exportedAPI(t *testing.T) string {
	t.Helper()
	bp, err := build.ImportDir(".", 0) // the files `go build` uses here
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	// The package imports only the standard library, which the default
	// importer reads from export data that it asks the go command for.
	conf := types.Config{Importer: importer.Default()}
	pkg, err := conf.Check("github.com/quietwire/retry", fset, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return p.Name()
	}
	var lines []string
	for _, name := range pkg.Scope().Names() {
		obj := pkg.Scope().Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			lines = append(lines, fmt.Sprintf("const %s %s = %s", name, types.TypeString(obj.Type(), q), obj.Val()))
		case *types.TypeName:
			lines = append(lines, typeLines(obj, q)...)
		default: // vars and funcs
			lines = append(lines, types.ObjectString(obj, q))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

// typeLines describes an exported type: its definition, then one line for
// each exported field (with its position among all the fields) or
// interface method, and each exported method of T and *T.
func typeLines(obj *types.TypeName, q types.Qualifier) []string {
	name := types.TypeString(obj.Type(), q) // with its type parameters, if any
	if obj.IsAlias() {
		return []string{fmt.Sprintf("type %s = %s", obj.Name(), name)}
	}
	var lines []string
	switch u := obj.Type().Underlying().(type) {
	case *types.Struct:
		lines = append(lines, "type "+name+" struct")
		for i := range u.NumFields() {
			if f := u.Field(i); f.Exported() {
				// the position too: reordering fields breaks unkeyed struct literals
				lines = append(lines, fmt.Sprintf("type %s struct, field %02d %s %s", name, i, f.Name(), types.TypeString(f.Type(), q)))
			}
		}
	case *types.Interface:
		lines = append(lines, "type "+name+" interface")
		for i := range u.NumMethods() {
			m := u.Method(i)
			lines = append(lines, fmt.Sprintf("type %s interface, method %s%s", name, m.Name(), strings.TrimPrefix(types.TypeString(m.Type(), q), "func")))
		}
		return lines // its methods are listed above
	default:
		lines = append(lines, fmt.Sprintf("type %s %s", name, types.TypeString(u, q)))
	}
	ms := types.NewMethodSet(types.NewPointer(obj.Type()))
	for i := range ms.Len() {
		if m := ms.At(i).Obj(); m.Exported() {
			lines = append(lines, types.ObjectString(m, q))
		}
	}
	return lines
}

// lineDiff lists the lines that only want has (-) and only got has (+).
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for _, l := range w {
		if l != "" && !slices.Contains(g, l) {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range g {
		if l != "" && !slices.Contains(w, l) {
			b.WriteString("+ " + l + "\n")
		}
	}
	if b.Len() == 0 {
		return "(the same lines, in another order or with other blank lines)\n"
	}
	return b.String()
}
