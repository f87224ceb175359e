package retry

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
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

// TestREADMEGoBlocks checks that each Go block of README.md compiles: a
// block of the circuit breaker, gRPC or database section stands in the
// module under testdata that runs it against the real library or server,
// the interview's block in testdata/interview, which runs it on its own,
// and any other block in a _test.go file of this package, as it is or
// indented one tab (the body of a function). The call in the package doc
// must be Example's, as it is.
func TestREADMEGoBlocks(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	modules := map[string]string{ // section: module
		"Circuit breaker":                    "testdata/gobreaker",
		"gRPC":                               "testdata/grpc",
		"Database transactions":              "testdata/postgres",
		"From a blank screen: the interview": "testdata/interview",
	}
	src := readFiles(t, "*_test.go")
	blocks := regexp.MustCompile("(?s)\n```go\n(.*?)```\n").FindAllSubmatchIndex(readme, -1)
	inModule := map[string]int{}
	for i, m := range blocks {
		block := string(readme[m[2]:m[3]])
		first, _, _ := strings.Cut(block, "\n")
		where, in := "_test.go file", src
		for section, module := range modules {
			span := regexp.MustCompile("(?s)\n## " + regexp.QuoteMeta(section) + "\n.*?\n## ").FindIndex(readme)
			if span == nil {
				t.Fatalf("README.md has no section %q", section)
			}
			if span[0] < m[0] && m[1] < span[1] {
				where, in = "file of "+module, readFiles(t, module+"/*.go")
				inModule[module]++
			}
		}
		if !holds(in, block) {
			t.Errorf("README.md's Go block %d, starting %q, is in no %s", i+1, first, where)
		}
	}
	for _, module := range modules {
		if inModule[module] == 0 {
			t.Errorf("README.md quotes no Go block of %s", module)
		}
	}
	pkg, err := os.ReadFile("retry.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, _, _ := strings.Cut(string(pkg), "\npackage retry\n")
	var call strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if code, ok := strings.CutPrefix(line, "//\t"); ok {
			call.WriteString("\t" + code + "\n")
		}
	}
	if example := "\nfunc Example() {\n"; call.Len() == 0 || !bytes.Contains(src, []byte(example)) ||
		!strings.Contains(strings.SplitAfter(string(src), example)[1], call.String()) {
		t.Errorf("the package doc's call is not Example's:\n%s", call.String())
	}
	if len(blocks) < 7 {
		t.Errorf("README.md has %d Go blocks; want at least 7", len(blocks))
	}
}

// readFiles returns the files that match pattern, one after the other.
func readFiles(t *testing.T, pattern string) []byte {
	t.Helper()
	names, _ := filepath.Glob(pattern)
	var src []byte
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	return src
}

// holds reports whether src holds block as it is, or indented one tab.
func holds(src []byte, block string) bool {
	indented := "\t" + strings.ReplaceAll(strings.TrimSuffix(block, "\n"), "\n", "\n\t") + "\n"
	indented = strings.ReplaceAll(indented, "\t\n", "\n") // blank lines stay blank
	return bytes.Contains(src, []byte(block)) || bytes.Contains(src, []byte(indented))
}
