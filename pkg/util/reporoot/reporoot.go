// Package reporoot finds the kcp-carry checkout from anywhere inside it, for
// the carry CLI, the commands and the tests alike (so it must not import
// testing).
package reporoot

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/mod/modfile"
)

// ModulePath is the module whose go.mod marks the repository root.
const ModulePath = "github.com/kcp-carry/kcp-carry"

// Find returns the nearest directory at or above start (made absolute; "."
// is the working directory) whose go.mod declares ModulePath. A go.mod of
// another module on the way (a nested test module, say) does not stop the
// search.
func Find(start string) (string, error) {
	from, err := filepath.Abs(start)
	if err != nil {
		return "", err
	}
	for dir := from; ; dir = filepath.Dir(dir) {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modfile.ModulePath(data) == ModulePath {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod for module %s in %s or any parent directory", ModulePath, from)
		}
	}
}
