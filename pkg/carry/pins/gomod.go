package pins

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

// ReadGoMod reads and parses the go.mod file at path. Parse, not ParseLax:
// ParseLax drops replace directives, which hold the pins.
func ReadGoMod(path string) (*modfile.File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return modfile.Parse(path, data, nil)
}

// FromGoMod reads, for each module, the replace directive of goModPath that
// redirects it to a fork version: the fork commit the carry patches.
func FromGoMod(goModPath string, modules []string) (map[string]module.Version, error) {
	f, err := ReadGoMod(goModPath)
	if err != nil {
		return nil, fmt.Errorf("reading pins: %w", err)
	}
	pins := map[string]module.Version{}
	var errs []error
	for _, mod := range modules {
		var found *modfile.Replace
		for _, r := range f.Replace {
			if r.Old.Path == mod && r.Old.Version == "" {
				found = r
			}
		}
		switch {
		case found == nil:
			errs = append(errs, fmt.Errorf("%s: no replace directive for %s, so carry does not know which fork version to patch; run `carry pins --write` (or add `replace %s => <fork module> <version>`)", goModPath, mod, mod))
		case found.New.Version == "":
			errs = append(errs, fmt.Errorf("%s:%d: replace %s => %s is a directory replacement; the overlay needs a module replacement with a version (run `carry pins --write`)", goModPath, found.Syntax.Start.Line, mod, found.New.Path))
		default:
			pins[mod] = found.New
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return pins, nil
}
