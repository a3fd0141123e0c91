package testshard

import (
	"fmt"
	"net"
	"net/http"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
)

// AdminUser is the user every loopback caller is authenticated as.
const AdminUser = "shard-admin"

// loopbackAdmin authenticates any caller connecting from a loopback address
// as AdminUser in system:masters. The shard only listens on loopback, so this
// is every caller; the check is a second fence, not the first.
var loopbackAdmin = authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return nil, false, fmt.Errorf("test shard: cannot parse remote address %q: %w", req.RemoteAddr, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return nil, false, nil
	}
	return &authenticator.Response{User: &user.DefaultInfo{
		Name:   AdminUser,
		Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated},
	}}, true, nil
})

// alwaysAllow is the authorizer: a test shard has no RBAC evaluation.
func alwaysAllow() authorizer.Authorizer {
	return authorizerfactory.NewAlwaysAllowAuthorizer()
}
