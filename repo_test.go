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
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var updateAPI = flag.Bool("update-api", false, "rewrite testdata/api.txt with the package's exported API")

// TestAPI compares the exported API, every exported name with its
// signature, with testdata/api.txt, so that no exported change is made by
// accident. After a deliberate change, run it with -update-api.
func TestAPI(t *testing.T) {
	const golden, update = "testdata/api.txt", "go test -run '^TestAPI$' -update-api ."
	got := exportedAPI(t)
	if *updateAPI {
		fatalIf(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v\nTo create it, run: %s", err, update)
	}
	if want := strings.ReplaceAll(string(b), "\r\n", "\n"); got != want { // a Windows checkout may add \r
		t.Errorf("the exported API differs from %s (- in the file, + in the code):\n%s\nIf the change is deliberate, run\n\t%s\n"+
			"and commit %s with the change and an entry in CHANGELOG.md.", golden, lineDiff(want, got), update, golden)
	}
}

// exportedAPI type-checks the package's non-test files and lists every
// exported name, one per line, sorted: constants with their values, vars,
// funcs, and types with their definitions, fields and methods.
func exportedAPI(t *testing.T) string {
	bp, err := build.ImportDir(".", 0) // the files `go build` uses here
	fatalIf(t, err)
	fset, files := token.NewFileSet(), []*ast.File(nil)
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, name, nil, 0)
		fatalIf(t, err)
		files = append(files, f)
	}
	pkg, err := (&types.Config{Importer: importer.Default()}).Check("github.com/quietwire/retry", fset, files, nil) // std only
	fatalIf(t, err)
	q := types.RelativeTo(pkg)
	var lines []string
	for _, name := range slices.DeleteFunc(pkg.Scope().Names(), func(n string) bool { return !token.IsExported(n) }) {
		switch obj := pkg.Scope().Lookup(name).(type) {
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
			if f := u.Field(i); f.Exported() { // its position too: reordering fields breaks unkeyed literals
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
	only := func(sign string, of, notIn []string) {
		for _, l := range of {
			if l != "" && !slices.Contains(notIn, l) {
				b.WriteString(sign + l + "\n")
			}
		}
	}
	only("- ", w, g)
	only("+ ", g, w)
	if b.Len() == 0 {
		return "(the same lines, in another order or with other blank lines)\n"
	}
	return b.String()
}

// TestREADMEGoBlocks checks that each Go block of README.md compiles: a
// block of the gRPC, database or interview section stands in the module
// under testdata that runs it, any other block in a _test.go file of this
// package, as it is or indented one tab (a function's body).
// The call in the package doc must be Example's, as it is.
func TestREADMEGoBlocks(t *testing.T) {
	readme, src := readFiles(t, "README.md"), readFiles(t, "*_test.go")
	spans := map[string][]int{} // module: the span of its section
	for section, module := range map[string]string{
		"gRPC":                               "testdata/grpc",
		"Database transactions":              "testdata/postgres",
		"From a blank screen: the interview": "testdata/interview",
	} {
		if spans[module] = regexp.MustCompile("(?s)\n## " + regexp.QuoteMeta(section) + "\n.*?\n## ").FindStringIndex(readme); spans[module] == nil {
			t.Fatalf("README.md has no section %q", section)
		}
	}
	blocks := regexp.MustCompile("(?s)\n```go\n(.*?)```\n").FindAllStringSubmatchIndex(readme, -1)
	inModule := map[string]int{}
	for i, m := range blocks {
		block, where, in := readme[m[2]:m[3]], "_test.go file", src
		for module, span := range spans {
			if span[0] < m[0] && m[1] < span[1] {
				where, in = "file of "+module, readFiles(t, module+"/*.go")
				inModule[module]++
			}
		}
		indented := "\t" + strings.ReplaceAll(strings.TrimSuffix(block, "\n"), "\n", "\n\t") + "\n"
		indented = strings.ReplaceAll(indented, "\t\n", "\n") // blank lines stay blank
		if first, _, _ := strings.Cut(block, "\n"); !strings.Contains(in, block) && !strings.Contains(in, indented) {
			t.Errorf("README.md's Go block %d, starting %q, is in no %s", i+1, first, where)
		}
	}
	for module := range spans {
		if inModule[module] == 0 {
			t.Errorf("README.md quotes no Go block of %s", module)
		}
	}
	if len(blocks) < 7 {
		t.Errorf("README.md has %d Go blocks; want at least 7", len(blocks))
	}
	doc, _, _ := strings.Cut(readFiles(t, "retry.go"), "\npackage retry\n")
	var call strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if code, ok := strings.CutPrefix(line, "//\t"); ok {
			call.WriteString("\t" + code + "\n")
		}
	}
	if _, example, _ := strings.Cut(src, "\nfunc Example() {\n"); call.Len() == 0 || !strings.Contains(example, call.String()) {
		t.Errorf("the package doc's call is not Example's:\n%s", call.String())
	}
}

// readFiles returns the files that match pattern, one after the other.
func readFiles(t *testing.T, pattern string) string {
	names, _ := filepath.Glob(pattern)
	var src strings.Builder
	for _, name := range names {
		b, err := os.ReadFile(name)
		fatalIf(t, err)
		src.Write(b)
	}
	return src.String()
}

func fatalIf(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
