package proxy

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// Ports 22990–22999 are reserved for these tests.
func echoServer(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return ln
}

func roundTrip(addr string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// The proxy forwards when healed, drops every connection while cut (also
// ones opened before the cut), delays when asked, and forwards again after
// healing.
func TestProxyCutDelayHeal(t *testing.T) {
	echoServer(t, "127.0.0.1:22990")
	p, err := Listen("127.0.0.1:22991", "127.0.0.1:22990")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	if got, err := roundTrip(p.Addr(), time.Second); err != nil || got != "ping\n" {
		t.Fatalf("healthy link: %q %v", got, err)
	}

	// A connection open across the cut is closed by it.
	open, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if _, err := open.Write([]byte("a\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(open)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	_ = open.SetReadDeadline(time.Now().Add(time.Second))
	_, _ = open.Write([]byte("b\n"))
	if line, err := r.ReadString('\n'); err == nil {
		t.Fatalf("open connection survived the cut: %q", line)
	}
	if got, err := roundTrip(p.Addr(), 300*time.Millisecond); err == nil {
		t.Fatalf("cut link answered %q", got)
	}

	p.Heal()
	p.Delay(200 * time.Millisecond)
	start := time.Now()
	if got, err := roundTrip(p.Addr(), 2*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("delayed link: %q %v", got, err)
	}
	if el := time.Since(start); el < 350*time.Millisecond {
		t.Fatalf("delay not applied in both directions: %v", el)
	}
	p.Heal()
	if got, err := roundTrip(p.Addr(), time.Second); err != nil || got != "ping\n" {
		t.Fatalf("healed link: %q %v", got, err)
	}
}

// Close returns even with connections open.
func TestProxyCloseEndsConnections(t *testing.T) {
	echoServer(t, "127.0.0.1:22992")
	p, err := Listen("127.0.0.1:22993", "127.0.0.1:22992")
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("Close hung")
	}
}
