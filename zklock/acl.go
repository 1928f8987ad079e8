package zklock

import (
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// DigestAuth is a ZooKeeper digest identity (user:password). A Session
// given one adds it to its connection before any other request, and
// go-zookeeper sends it again after every reconnect.
type DigestAuth struct {
	User     string
	Password string
}

// ACLPolicy chooses the ACL of every node a Session creates: the root and
// its ancestors, lock nodes and contenders.
type ACLPolicy int

const (
	// ACLDefault is ACLCreator when Options.Auth is set, ACLOpen otherwise.
	ACLDefault ACLPolicy = iota
	// ACLCreator: digest:<user>:<hash> ALL for the session's own identity
	// and world:anyone READ. Other clients can read the lock's state but
	// cannot delete, create children under, or rewrite any node. Needs
	// Options.Auth.
	ACLCreator
	// ACLOpen: world:anyone ALL. Any ZooKeeper client can delete a holder's
	// contender (breaking the lock) or plant nodes.
	ACLOpen
)

func (p ACLPolicy) String() string {
	switch p {
	case ACLDefault:
		return "default"
	case ACLCreator:
		return "creator"
	case ACLOpen:
		return "open"
	}
	return fmt.Sprintf("ACLPolicy(%d)", int(p))
}

// ParseACLPolicy parses "creator" or "open" ("" is ACLDefault).
func ParseACLPolicy(s string) (ACLPolicy, error) {
	switch s {
	case "":
		return ACLDefault, nil
	case "creator":
		return ACLCreator, nil
	case "open":
		return ACLOpen, nil
	}
	return 0, fmt.Errorf("zklock: ACL policy %q: want creator or open", s)
}

// ParseDigestAuth reads "user:password" (the password may contain colons).
func ParseDigestAuth(s string) (DigestAuth, error) {
	user, pw, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || user == "" || pw == "" {
		return DigestAuth{}, fmt.Errorf("zklock: digest auth must be user:password")
	}
	return DigestAuth{User: user, Password: pw}, nil
}

// aclFor is the ACL list of nodes created under policy p.
func aclFor(p ACLPolicy, auth *DigestAuth) ([]zk.ACL, error) {
	if p == ACLDefault {
		p = ACLOpen
		if auth != nil {
			p = ACLCreator
		}
	}
	switch p {
	case ACLOpen:
		return zk.WorldACL(zk.PermAll), nil
	case ACLCreator:
		if auth == nil {
			return nil, fmt.Errorf("zklock: ACL policy creator needs digest auth")
		}
		acl := zk.DigestACL(zk.PermAll, auth.User, auth.Password)
		return append(acl, zk.WorldACL(zk.PermRead)...), nil
	}
	return nil, fmt.Errorf("zklock: unknown ACL policy %v", p)
}
