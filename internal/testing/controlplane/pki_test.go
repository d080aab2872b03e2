package controlplane

import (
	"crypto/x509"
	"slices"
	"testing"
)

func TestTokenLine(t *testing.T) {
	cases := []struct {
		user   string
		groups []string
		want   string
	}{
		{"alice", []string{"a", "b"}, "tok,alice,alice,\"a,b\"\n"},
		{"bob", nil, "tok,bob,bob\n"},
	}
	for _, c := range cases {
		if got := tokenLine("tok", c.user, c.groups); got != c.want {
			t.Errorf("tokenLine(%s, %v) = %q, want %q", c.user, c.groups, got, c.want)
		}
	}
}

func TestValidateTokenUser(t *testing.T) {
	for _, u := range []User{{Name: ""}, {Name: "a,b"}, {Name: "x", Groups: []string{`g"`}}, {Name: "x", Groups: []string{""}}} {
		if err := validateTokenUser(u); err == nil {
			t.Errorf("validateTokenUser(%+v) = nil, want error", u)
		}
	}
	if err := validateTokenUser(User{Name: "system:serviceaccount:ns:sa", Groups: []string{"g1", "g2"}}); err != nil {
		t.Errorf("valid user rejected: %v", err)
	}
}

func TestCertificates(t *testing.T) {
	ca, err := newCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := newServingCert(ca)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	for _, host := range []string{"127.0.0.1", "localhost", "kubernetes.default.svc"} {
		if _, err := serving.cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
			t.Errorf("serving cert for %s: %v", host, err)
		}
	}
	client, err := newClientCert(ca, "alice", []string{"devs", "ops"})
	if err != nil {
		t.Fatal(err)
	}
	opts := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := client.cert.Verify(opts); err != nil {
		t.Errorf("client cert: %v", err)
	}
	// DER sorts the organizations of one RDN set; groups are unordered anyway.
	groups := slices.Sorted(slices.Values(client.cert.Subject.Organization))
	if client.cert.Subject.CommonName != "alice" || !slices.Equal(groups, []string{"devs", "ops"}) {
		t.Errorf("client cert subject = %v", client.cert.Subject)
	}
}
