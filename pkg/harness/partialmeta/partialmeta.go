// Package partialmeta spells the requests this project is about: the Accept
// headers that ask an apiserver for partial object metadata
// (meta.k8s.io PartialObjectMetadata and PartialObjectMetadataList), the
// media type kcp's metadata client sends.
package partialmeta

// The meta.k8s.io versions a partial-metadata request can ask for.
const (
	V1      = "v1"
	V1beta1 = "v1beta1"
)

// ListAccept is the Accept header of a partial-metadata LIST at metaVersion.
func ListAccept(metaVersion string) string {
	return "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=" + metaVersion
}

// ObjectAccept is the Accept header of a partial-metadata GET or WATCH at
// metaVersion.
func ObjectAccept(metaVersion string) string {
	return "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=" + metaVersion
}
