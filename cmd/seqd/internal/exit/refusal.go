package exit

import (
	"errors"
	"fmt"
	"syscall"
)

// What a command says when the daemon cannot be reached or refuses its
// caller: sentences built from the flags the command was given.

// NoDaemon says, in words, why no answer came from addr, and what to do:
// start a daemon or point --addr at one.
func NoDaemon(addr string, err error) error {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("no daemon answers at %s (connection refused): start one (seqd dev, or seqd serve --zk HOSTS), or give --addr (or SEQD_ADDR) the address of one that runs", addr)
	}
	return fmt.Errorf("the daemon at %s cannot be reached (%s): check that it runs there and is seqd, or give --addr (or SEQD_ADDR) the address of one that does", addr, Unreached(err))
}

// NamedBy says what named a refused caller, in the daemon's order (admin
// token, named token, certificate, anonymous), from the files of
// --admin-token-file, --api-token-file and --cert ("" for a flag not
// given), and what to give instead.
func NamedBy(adminTokenFile, apiTokenFile, certFile string) string {
	if adminTokenFile != "" {
		return fmt.Sprintf("the admin token of --admin-token-file %s (or SEQD_ADMIN_TOKEN_FILE) does not allow it", adminTokenFile)
	}
	tok, cert := apiTokenFile, certFile
	switch {
	case tok != "" && cert != "":
		return fmt.Sprintf("the token of --api-token-file %s names the caller if it is a named token of the daemon's --tokens-file, else the client certificate of --cert %s does; that identity may not make this call: send the named token or certificate of an identity the daemon's policy lets make it", tok, cert)
	case tok != "":
		return fmt.Sprintf("the token of --api-token-file %s (or SEQD_API_TOKEN_FILE) does not allow it: send the named token of an identity the daemon's policy lets make this call", tok)
	case cert != "":
		return fmt.Sprintf("the identity of the client certificate of --cert %s (or SEQD_CERT) may not make this call: give --cert and --key a certificate of an identity the daemon's policy lets make it, or send that identity's named token with --api-token-file", cert)
	}
	return "this call sent no token and no client certificate, so the daemon took it for anonymous: give --api-token-file (or SEQD_API_TOKEN_FILE) a named token, or --cert and --key (or SEQD_CERT and SEQD_KEY) a certificate, of an identity the daemon's policy lets make this call"
}
