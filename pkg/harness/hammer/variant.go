package hammer

import (
	"fmt"
	"strings"
)

// ListerVariant is one kind of partial-metadata LIST.
type ListerVariant struct {
	// MetaVersion is the meta.k8s.io version asked for in Accept: "v1" or "v1beta1".
	MetaVersion string `json:"metaVersion"`
	// ResourceVersion is "" (consistent read) or "0" (any, from the watch cache).
	ResourceVersion string `json:"resourceVersion"`
	// Paged lists with limit/continue.
	Paged bool `json:"paged"`
	// KCPMetadataClient sends the LIST through github.com/kcp-dev/kcp/pkg/metadata,
	// the client that issues this request in production (always meta.k8s.io/v1).
	KCPMetadataClient bool `json:"kcpMetadataClient"`
}

// Name is the variant's spelling in reports and in --lister-variants:
// "<v1|v1beta1|kcp>:<rv>[:paged]", e.g. "v1beta1:0:paged", "kcp:".
func (v ListerVariant) Name() string {
	s := v.MetaVersion
	if v.KCPMetadataClient {
		s = "kcp"
	}
	s += ":" + v.ResourceVersion
	if v.Paged {
		s += ":paged"
	}
	return s
}

// opName is the variant's operation in reports, e.g. `list v1beta1 rv="" paged`,
// `list kcp-client rv=0`.
func (v ListerVariant) opName() string {
	s := "list " + v.MetaVersion
	if v.KCPMetadataClient {
		s = "list kcp-client"
	}
	if v.ResourceVersion == "" {
		s += ` rv=""`
	} else {
		s += " rv=" + v.ResourceVersion
	}
	if v.Paged {
		s += " paged"
	}
	return s
}

func (v ListerVariant) validate() error {
	if v.KCPMetadataClient {
		if v.MetaVersion != "v1" {
			return fmt.Errorf("lister %s: kcp's metadata client asks for meta.k8s.io/v1 only", v.Name())
		}
	} else if v.MetaVersion != "v1" && v.MetaVersion != "v1beta1" {
		return fmt.Errorf("lister %s: meta version must be v1 or v1beta1", v.Name())
	}
	if v.ResourceVersion != "" && v.ResourceVersion != "0" {
		return fmt.Errorf("lister %s: resourceVersion must be \"\" or \"0\"", v.Name())
	}
	return nil
}

// ParseListerVariant parses "<v1|v1beta1|kcp>:<rv>[:paged]" with rv "" or "0".
func ParseListerVariant(s string) (ListerVariant, error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) < 2 || len(parts) > 3 || (len(parts) == 3 && parts[2] != "paged") {
		return ListerVariant{}, fmt.Errorf("lister variant %q: want <v1|v1beta1|kcp>:<\"\"|0>[:paged]", s)
	}
	v := ListerVariant{MetaVersion: parts[0], ResourceVersion: parts[1], Paged: len(parts) == 3}
	if parts[0] == "kcp" {
		v.MetaVersion, v.KCPMetadataClient = "v1", true
	}
	if err := v.validate(); err != nil {
		return ListerVariant{}, err
	}
	return v, nil
}

// ParseListerVariants parses a comma-separated list of variants.
func ParseListerVariants(s string) ([]ListerVariant, error) {
	var out []ListerVariant
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		v, err := ParseListerVariant(part)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// defaultVariants is cycled by DefaultListerVariants: the first lister always
// goes through kcp's metadata client, and the first eight cover v1 and v1beta1,
// resourceVersion "" and "0", paged and unpaged.
var defaultVariants = []ListerVariant{
	{MetaVersion: "v1", ResourceVersion: "0", KCPMetadataClient: true},
	{MetaVersion: "v1beta1", ResourceVersion: ""},
	{MetaVersion: "v1", ResourceVersion: "0"},
	{MetaVersion: "v1beta1", ResourceVersion: "0", Paged: true},
	{MetaVersion: "v1", ResourceVersion: ""},
	{MetaVersion: "v1beta1", ResourceVersion: "0"},
	{MetaVersion: "v1", ResourceVersion: "", Paged: true},
	{MetaVersion: "v1", ResourceVersion: "", KCPMetadataClient: true},
}

// DefaultListerVariants returns n variants cycling through the default mix.
func DefaultListerVariants(n int) []ListerVariant {
	out := make([]ListerVariant, n)
	for i := range out {
		out[i] = defaultVariants[i%len(defaultVariants)]
	}
	return out
}

// variantsFor returns the variant of each of n listers: the given ones cycled,
// or the default mix.
func variantsFor(given []ListerVariant, n int) []ListerVariant {
	if len(given) == 0 {
		return DefaultListerVariants(n)
	}
	out := make([]ListerVariant, n)
	for i := range out {
		out[i] = given[i%len(given)]
	}
	return out
}
