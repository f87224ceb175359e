package retry_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEGoBlocks checks that each Go block of README.md compiles: it
// stands in a _test.go file of this package, as it is or indented one tab
// (the body of a function). Only the gRPC recipe, marked "not compiled",
// is left out, since the module does not import gRPC. The call in the
// package doc must be Example's, as it is.
func TestREADMEGoBlocks(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob("*_test.go")
	var src []byte
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	blocks := regexp.MustCompile("(?s)(<!-- not compiled: needs google.golang.org/grpc -->)?\n```go\n(.*?)```\n").FindAllStringSubmatch(string(readme), -1)
	skipped := 0
	for i, m := range blocks {
		if m[1] != "" {
			skipped++
			continue
		}
		indented := "\t" + strings.ReplaceAll(strings.TrimSuffix(m[2], "\n"), "\n", "\n\t") + "\n"
		indented = strings.ReplaceAll(indented, "\t\n", "\n") // blank lines stay blank
		if !bytes.Contains(src, []byte(m[2])) && !bytes.Contains(src, []byte(indented)) {
			first, _, _ := strings.Cut(m[2], "\n")
			t.Errorf("README.md's Go block %d, starting %q, is in no _test.go file", i+1, first)
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
	if len(blocks)-skipped < 5 || skipped != 1 {
		t.Errorf("README.md has %d checked Go blocks and %d marked not compiled; want at least 5, and 1", len(blocks)-skipped, skipped)
	}
}
