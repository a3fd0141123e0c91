// Package image layers the carry's kcp binaries onto kcp's release image:
// for each platform of the base (an image or an index), cross-compile the kcp
// servers with the carry, check their build info, append one layer holding
// them at the base's paths, and label the result with its provenance. It
// pushes to a registry or writes an OCI image layout, only after every
// platform was built and checked. No Docker daemon is involved.
package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/mod/modfile"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcpbuild"
	"github.com/kcp-carry/kcp-carry/pkg/util/gitexec"
)

// Annotation and label keys. The org.opencontainers ones are the OCI image
// spec's pre-defined annotations; SeriesKey names the carry's series digest
// (the "-carry-<id>" of the version string).
const (
	VersionKey    = "org.opencontainers.image.version"
	RevisionKey   = "org.opencontainers.image.revision"
	SourceKey     = "org.opencontainers.image.source"
	BaseNameKey   = "org.opencontainers.image.base.name"
	BaseDigestKey = "org.opencontainers.image.base.digest"
	SeriesKey     = "com.github.kcp-carry.series.digest"
	refNameKey    = "org.opencontainers.image.ref.name"
)

// KCPPath is the file whose presence makes a base look like kcp's image.
const KCPPath = "/kcp"

// Options configures Run. Carry (or Root, to load it) and one of Push or
// OutDir are required.
type Options struct {
	// Carry is the carry the images ship; nil loads the carry of Root.
	Carry *carryset.Carry
	// Root is the kcp-carry repository.
	Root string
	// KCPSource and Replaces are passed to carry build (see kcpbuild.Options).
	KCPSource string
	Replaces  map[string]string
	// Base is a registry reference or oci:DIR. Default
	// DefaultBaseRepository:<kcp version built>.
	Base string
	// Platforms narrows a multi-platform base (each must be in it). Empty
	// means every linux platform of the base.
	Platforms []v1.Platform
	// Push is the reference the result is pushed to.
	Push string
	// OutDir receives the result as an OCI image layout.
	OutDir string
	// BinDir holds each platform's binaries in BinDir/<os>_<arch>; default
	// Root/bin (as carry build cross-compiles).
	BinDir string
	// Progress receives a line per step. nil discards.
	Progress io.Writer
	// RemoteOptions reach registries; default the context and
	// authn.DefaultKeychain.
	RemoteOptions []remote.Option
	// Build builds one platform's binaries; default kcpbuild.Build.
	Build func(context.Context, kcpbuild.Options) (*kcpbuild.Result, error)
}

// Result says what was made.
type Result struct {
	// Digest is the result's: the index for a multi-platform base, else the image.
	Digest    string `json:"digest"`
	MediaType string `json:"mediaType"`
	// Pushed is Push@Digest when pushed.
	Pushed string `json:"pushed,omitempty"`
	// Out is the OCI layout directory when written, RefName its entry's name.
	Out        string     `json:"out,omitempty"`
	RefName    string     `json:"refName,omitempty"`
	Version    string     `json:"version"`
	Revision   string     `json:"revision,omitempty"`
	Source     string     `json:"source"`
	CarryID    string     `json:"carryID"`
	BaseName   string     `json:"baseName"`
	BaseDigest string     `json:"baseDigest"`
	Platforms  []Platform `json:"platforms"`
}

// Platform is one platform's image.
type Platform struct {
	Platform    string      `json:"platform"`
	Digest      string      `json:"digest"`
	BaseDigest  string      `json:"baseDigest"`
	LayerDigest string      `json:"layerDigest"`
	Binaries    []layerFile `json:"binaries"`
}

// built is the assembled result before it is written anywhere.
type built struct {
	index v1.ImageIndex // nil for a single-platform base
	image v1.Image
}

// Run builds the image, checks it, then writes and pushes it.
func Run(ctx context.Context, opts Options) (*Result, error) {
	o, err := opts.resolve(ctx)
	if err != nil {
		return nil, err
	}
	logf := func(format string, args ...any) { fmt.Fprintf(o.Progress, "carry image: "+format+"\n", args...) }

	var pushRef name.Reference
	if o.Push != "" {
		if pushRef, err = name.ParseReference(o.Push); err != nil {
			return nil, fmt.Errorf("--push %s: %w", o.Push, err)
		}
	}
	if o.OutDir != "" {
		if err := checkOutDir(o.OutDir); err != nil {
			return nil, err
		}
	}
	defaultFor := ""
	if o.Base == "" {
		if defaultFor, err = kcpbuild.KCPVersion(ctx, o.Root, o.KCPSource); err != nil {
			return nil, err
		}
		o.Base = DefaultBaseRepository + ":" + defaultFor
	}
	logf("reading the base %s", o.Base)
	b, err := loadBase(o.Base, o.RemoteOptions)
	if err != nil && defaultFor != "" {
		return nil, fmt.Errorf("%w\n(the default base for kcp %s; name another with --base)", err, defaultFor)
	}
	if err != nil {
		return nil, err
	}
	pbs, err := b.platforms(o.Platforms)
	if err != nil {
		return nil, err
	}
	for _, pb := range pbs {
		ok, err := fileInImage(pb.image, KCPPath)
		if err != nil {
			return nil, fmt.Errorf("--base %s (%s): reading its filesystem: %w", b.name, pb.platform, err)
		}
		if !ok {
			return nil, fmt.Errorf("--base %s (%s) does not look like kcp's image: no %s in its filesystem", b.name, pb.platform, KCPPath)
		}
	}

	carryID, err := o.Carry.ID()
	if err != nil {
		return nil, err
	}
	res := &Result{
		Revision:   gitRevision(ctx, o.Root),
		Source:     sourceURL(o.Root),
		CarryID:    carryID,
		BaseName:   b.name,
		BaseDigest: b.digest.String(),
	}

	// Build and check every platform before anything is written or pushed.
	var images []v1.Image
	for _, pb := range pbs {
		plat := pb.platform.String()
		logf("%s: building kcp (GOOS=%s GOARCH=%s, CGO off)", plat, pb.platform.OS, pb.platform.Architecture)
		br, err := o.Build(ctx, kcpbuild.Options{
			Carry:     o.Carry,
			KCPSource: o.KCPSource,
			Replaces:  o.Replaces,
			OutDir:    filepath.Join(o.BinDir, pb.platform.OS+"_"+pb.platform.Architecture),
			GOOS:      pb.platform.OS,
			GOARCH:    pb.platform.Architecture,
			Progress:  o.Progress,
		})
		if err != nil {
			return nil, err
		}
		if res.Version == "" {
			res.Version = br.GitVersion
		} else if res.Version != br.GitVersion {
			return nil, fmt.Errorf("%s: built version %s differs from the other platforms' %s", plat, br.GitVersion, res.Version)
		}
		files, err := checkBinaries(br.Binaries, br.Overlay, pb.platform)
		if err != nil {
			return nil, err
		}
		img, layerDigest, err := assemble(pb, files, res.labels(pb.digest.String()))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", plat, err)
		}
		if err := checkImage(img, pb, files); err != nil {
			return nil, err
		}
		d, err := img.Digest()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", plat, err)
		}
		logf("%s: %s (base %s, added layer %s)", plat, d, pb.digest, layerDigest)
		images = append(images, img)
		res.Platforms = append(res.Platforms, Platform{Platform: plat, Digest: d.String(), BaseDigest: pb.digest.String(), LayerDigest: layerDigest.String(), Binaries: files})
	}

	out := &built{}
	if b.index != nil {
		out.index, err = assembleIndex(b, pbs, images, res.labels(b.digest.String()))
		if err != nil {
			return nil, err
		}
	} else {
		out.image = images[0]
	}
	digest, mt, err := out.describe()
	if err != nil {
		return nil, err
	}
	res.Digest, res.MediaType = digest.String(), string(mt)

	tmp := ""
	if o.OutDir != "" {
		res.RefName = refName(pushRef, b, res)
		logf("writing the OCI layout %s", o.OutDir)
		if tmp, err = writeLayoutTemp(o.OutDir, out, res.RefName); err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp) // gone once renamed; removes it on a failed push
	}
	if pushRef != nil {
		logf("pushing %s", pushRef)
		updates := make(chan v1.Update, 16)
		done := make(chan struct{})
		go func() { logPushProgress(updates, logf); close(done) }()
		pushOpts := append(slices.Clone(o.RemoteOptions), remote.WithProgress(updates))
		if out.index != nil {
			err = remote.WriteIndex(pushRef, out.index, pushOpts...)
		} else {
			err = remote.Write(pushRef, out.image, pushOpts...)
		}
		// remote closes updates when the write returns (but not when it
		// refuses its options before starting, hence the bound).
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
		if err != nil {
			return nil, fmt.Errorf("--push %s: %w", o.Push, err)
		}
		res.Pushed = pushRef.Context().Digest(res.Digest).String()
	}
	if tmp != "" {
		if err := commitLayout(tmp, o.OutDir); err != nil {
			return nil, err
		}
		res.Out = o.OutDir
	}
	return res, nil
}

// logPushProgress reports a push at every further quarter of its bytes.
func logPushProgress(updates <-chan v1.Update, logf func(string, ...any)) {
	next := int64(1)
	for u := range updates {
		if u.Total <= 0 || u.Error != nil {
			continue
		}
		for next <= 4 && u.Complete*4 >= u.Total*next {
			logf("pushed %d of %d MiB", u.Complete>>20, u.Total>>20)
			next++
		}
	}
}

func (o Options) resolve(ctx context.Context) (Options, error) {
	if o.Carry == nil && o.Root == "" {
		return o, errors.New("image: Options.Carry or Options.Root is required")
	}
	if o.Push == "" && o.OutDir == "" {
		return o, errors.New("nothing to do: give --push REF or --out DIR (or both)")
	}
	var err error
	if o.Carry == nil {
		if o.Carry, err = carryset.Load(o.Root); err != nil {
			return o, err
		}
	}
	o.Root = o.Carry.Root
	if o.BinDir == "" {
		o.BinDir = filepath.Join(o.Root, "bin")
	}
	if o.OutDir != "" {
		if o.OutDir, err = filepath.Abs(o.OutDir); err != nil {
			return o, err
		}
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.RemoteOptions == nil {
		o.RemoteOptions = []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	}
	if o.Build == nil {
		o.Build = kcpbuild.Build
	}
	return o, nil
}

// labels are the provenance labels and annotations; baseDigest is the
// digest of the base the annotated manifest was made from.
func (r *Result) labels(baseDigest string) map[string]string {
	l := map[string]string{
		VersionKey:    r.Version,
		SourceKey:     r.Source,
		BaseNameKey:   r.BaseName,
		BaseDigestKey: baseDigest,
		SeriesKey:     r.CarryID,
	}
	if r.Revision != "" {
		l[RevisionKey] = r.Revision
	}
	return l
}

// assemble appends the binaries' layer to one platform's base and adds the
// labels to its config and the annotations to its manifest.
func assemble(pb platformBase, files []layerFile, labels map[string]string) (v1.Image, v1.Hash, error) {
	mt, err := pb.image.MediaType()
	if err != nil {
		return nil, v1.Hash{}, err
	}
	layer, err := binaryLayer(files, layerForBase(mt))
	if err != nil {
		return nil, v1.Hash{}, err
	}
	layerDigest, err := layer.Digest()
	if err != nil {
		return nil, v1.Hash{}, err
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, "/"+f.Name)
	}
	baseCfg, err := pb.image.ConfigFile()
	if err != nil {
		return nil, v1.Hash{}, err
	}
	img, err := mutate.Append(pb.image, mutate.Addendum{
		Layer:     layer,
		MediaType: layerForBase(mt),
		History: v1.History{
			Created:   baseCfg.Created,
			CreatedBy: "carry image: " + strings.Join(paths, " ") + " (" + labels[VersionKey] + ")",
			Comment:   "the kcp-carry binaries",
		},
	})
	if err != nil {
		return nil, v1.Hash{}, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, v1.Hash{}, err
	}
	cfg = cfg.DeepCopy()
	if cfg.Config.Labels == nil {
		cfg.Config.Labels = map[string]string{}
	}
	maps.Copy(cfg.Config.Labels, labels)
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, v1.Hash{}, err
	}
	return mutate.Annotations(img, labels).(v1.Image), layerDigest, nil
}

// assembleIndex is the multi-platform result: the base index's media type,
// one entry per platform image, and the provenance annotations.
func assembleIndex(b *base, pbs []platformBase, images []v1.Image, annotations map[string]string) (v1.ImageIndex, error) {
	mt := b.mediaType
	if !mt.IsIndex() {
		mt = types.OCIImageIndex
	}
	idx := mutate.IndexMediaType(empty.Index, mt)
	for i, img := range images {
		p := pbs[i].platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return mutate.Annotations(idx, annotations).(v1.ImageIndex), nil
}

func (b *built) describe() (v1.Hash, types.MediaType, error) {
	if b.index != nil {
		d, err := b.index.Digest()
		if err != nil {
			return v1.Hash{}, "", err
		}
		mt, err := b.index.MediaType()
		return d, mt, err
	}
	d, err := b.image.Digest()
	if err != nil {
		return v1.Hash{}, "", err
	}
	mt, err := b.image.MediaType()
	return d, mt, err
}

// refName names the result inside an OCI layout: the --push tag, or
// <kcp version>-carry-<id> from the base's tag.
func refName(push name.Reference, b *base, r *Result) string {
	if t, ok := push.(name.Tag); ok {
		return t.TagStr()
	}
	tag := "kcp"
	if t, err := name.NewTag(b.name); err == nil && !strings.HasPrefix(b.name, ociPrefix) {
		tag = t.TagStr()
	}
	return tag + "-carry-" + r.CarryID
}

// gitRevision is the kcp-carry commit built, or "" outside a git checkout.
func gitRevision(ctx context.Context, root string) string {
	out, err := gitexec.Repo{Dir: root}.Run(ctx, "rev-parse", "HEAD")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// sourceURL is the repository's address, from its module path.
func sourceURL(root string) string {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return ""
	}
	return "https://" + path.Clean(modfile.ModulePath(data))
}
