package testshard

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	configmapstore "k8s.io/kubernetes/pkg/registry/core/configmap/storage"
	clusterrolestore "k8s.io/kubernetes/pkg/registry/rbac/clusterrole/storage"
	rolestore "k8s.io/kubernetes/pkg/registry/rbac/role/storage"

	// Register the internal and v1 types of the two groups in legacyscheme,
	// as kube-apiserver (and so kcp) does.
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"
)

// storagePrefix is the etcd key prefix, kcp's default.
const storagePrefix = "/registry"

// newEtcdOptions returns the storage options: the legacy scheme's codec
// (objects are decoded to internal types, as in kcp), with the watch cache on
// or off.
func newEtcdOptions(watchCache bool) *genericoptions.EtcdOptions {
	codec := legacyscheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion, rbacv1.SchemeGroupVersion)
	o := genericoptions.NewEtcdOptions(storagebackend.NewDefaultConfig(storagePrefix, codec))
	o.EnableWatchCache = watchCache
	return o
}

// apiGroups builds the fork's own registries on getter: core/v1 ConfigMaps
// (the legacy group) and rbac/v1 ClusterRoles and Roles.
func apiGroups(getter generic.RESTOptionsGetter) (legacy, rbac *genericapiserver.APIGroupInfo, err error) {
	configMaps, err := configmapstore.NewREST(getter)
	if err != nil {
		return nil, nil, fmt.Errorf("configmaps storage: %w", err)
	}
	clusterRoles, err := clusterrolestore.NewREST(getter)
	if err != nil {
		return nil, nil, fmt.Errorf("clusterroles storage: %w", err)
	}
	roles, err := rolestore.NewREST(getter)
	if err != nil {
		return nil, nil, fmt.Errorf("roles storage: %w", err)
	}

	core := genericapiserver.NewDefaultAPIGroupInfo(corev1.GroupName, legacyscheme.Scheme, legacyscheme.ParameterCodec, legacyscheme.Codecs)
	core.PrioritizedVersions = []schema.GroupVersion{corev1.SchemeGroupVersion}
	core.VersionedResourcesStorageMap["v1"] = map[string]rest.Storage{
		"configmaps": configMaps,
	}

	r := genericapiserver.NewDefaultAPIGroupInfo(rbacv1.GroupName, legacyscheme.Scheme, legacyscheme.ParameterCodec, legacyscheme.Codecs)
	r.PrioritizedVersions = []schema.GroupVersion{rbacv1.SchemeGroupVersion}
	r.VersionedResourcesStorageMap["v1"] = map[string]rest.Storage{
		"clusterroles": clusterRoles,
		"roles":        roles,
	}
	return &core, &r, nil
}
