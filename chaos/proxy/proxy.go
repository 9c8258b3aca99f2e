// Package proxy is a fault-injecting TCP proxy for one directed link between
// two nodes. Node i reaches node j through the proxy for i→j, so cutting it
// cuts i's raft messages, forwarded writes and status calls to j (and their
// responses) while j→i stays as it is.
package proxy

import (
	"io"
	"net"
	"sync"
	"time"
)

// Proxy forwards connections accepted on its listener to Target.
type Proxy struct {
	Target string
	ln     net.Listener

	mu    sync.Mutex
	cut   bool
	delay time.Duration
	conns map[net.Conn]struct{}
	done  chan struct{}
	wg    sync.WaitGroup
}

// Listen starts a proxy on addr that forwards to target.
func Listen(addr, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{Target: target, ln: ln, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut breaks the link: open connections are closed and new ones are closed
// as soon as they are accepted, until Heal.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
}

// Delay holds every chunk of data for d before forwarding it (0 = none).
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Heal restores the link (no cut, no delay).
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.delay = 0
	p.mu.Unlock()
}

// IsCut reports whether the link is cut.
func (p *Proxy) IsCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	select {
	case <-p.done:
		return
	default:
		close(p.done)
	}
	_ = p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			_ = c.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	upstream, err := net.DialTimeout("tcp", p.Target, time.Second)
	if err != nil || !p.track(upstream) {
		_ = client.Close()
		if upstream != nil {
			_ = upstream.Close()
		}
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(upstream, client) }()
	go func() { defer wg.Done(); p.pipe(client, upstream) }()
	wg.Wait()
}

// pipe copies src to dst, applying the delay, and closes both at the end so
// the other direction ends too.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer func() {
		_ = dst.Close()
		_ = src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			d, cut := p.delay, p.cut
			p.mu.Unlock()
			if cut {
				return
			}
			if d > 0 {
				select {
				case <-time.After(d):
				case <-p.done:
					return
				}
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}
