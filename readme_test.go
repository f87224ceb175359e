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
// (the body of a function). The blocks of the circuit breaker recipe stand
// in testdata/gobreaker, whose tests run them against gobreaker, and those
// that do not name gobreaker stand here too, where Example_breaker runs
// them. Only the gRPC recipe, marked "not compiled", is left out, since no
// module here imports gRPC. The call in the package doc must be Example's,
// as it is.
func TestREADMEGoBlocks(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, breakerSrc := readFiles(t, "*_test.go"), readFiles(t, "testdata/gobreaker/*.go")
	section := regexp.MustCompile("(?s)\n## Circuit breaker\n.*?\n## ").FindIndex(readme)
	if section == nil {
		t.Fatal(`README.md has no section "Circuit breaker"`)
	}
	blocks := regexp.MustCompile("(?s)(<!-- not compiled: needs google.golang.org/grpc -->)?\n```go\n(.*?)```\n").FindAllSubmatchIndex(readme, -1)
	skipped, breakerBlocks := 0, 0
	for i, m := range blocks {
		if m[2] >= 0 {
			skipped++
			continue
		}
		block := string(readme[m[4]:m[5]])
		first, _, _ := strings.Cut(block, "\n")
		inBreaker := section[0] < m[0] && m[1] < section[1]
		if inBreaker {
			breakerBlocks++
			if !holds(breakerSrc, block) {
				t.Errorf("README.md's Go block %d, starting %q, is in no file of testdata/gobreaker", i+1, first)
			}
		}
		if !holds(src, block) && !(inBreaker && strings.Contains(block, "gobreaker.")) {
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
	if len(blocks)-skipped < 5 || skipped != 1 || breakerBlocks < 2 {
		t.Errorf("README.md has %d checked Go blocks, %d of the breaker, and %d marked not compiled; want at least 5, at least 2, and 1",
			len(blocks)-skipped, breakerBlocks, skipped)
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
