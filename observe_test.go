package retry_test

import (
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The README's observability recipe is a whole file,
// observe_recipe_test.go without its package clause, so it compiles here;
// and it refers to nothing declared outside it but the names of the
// packages it imports and Go's predeclared ones, so it compiles pasted
// alone into an empty package too.
func TestObserveRecipeStandsAlone(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Observing retries\n")
	_, block, ok2 := strings.Cut(section, "\n```go\n")
	block, _, ok3 := strings.Cut(block, "\n```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal(`README.md has no Go block under "## Observing retries"`)
	}
	src, err := os.ReadFile("observe_recipe_test.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := "package retry_test\n\n" + block + "\n"; string(src) != want {
		t.Fatalf("observe_recipe_test.go is not the README's block under its package clause")
	}
	f, err := parser.ParseFile(token.NewFileSet(), "observe_recipe_test.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	imported := map[string]bool{}
	for _, spec := range f.Imports {
		path, _ := strconv.Unquote(spec.Path.Value)
		imported[path[strings.LastIndex(path, "/")+1:]] = true
	}
	for _, id := range f.Unresolved {
		if !imported[id.Name] && types.Universe.Lookup(id.Name) == nil {
			t.Errorf("the README's observability recipe uses %s, which it does not declare", id.Name)
		}
	}
	if len(f.Imports) == 0 || len(f.Decls) < 8 {
		t.Errorf("the recipe has %d imports and %d declarations; want its imports, and callSite, instrument, outcomeOf, bucketOf and the handler", len(f.Imports), len(f.Decls))
	}
}
