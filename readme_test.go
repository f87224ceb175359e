package retry_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

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
	if len(blocks) < 8 {
		t.Errorf("README.md has %d Go blocks; want at least 8", len(blocks))
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
