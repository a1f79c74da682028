package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/spider-crawler/spider/internal/cluster"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"
)

// redisFlags are the connection flags shared by the distributed commands.
type redisFlags struct {
	url     string
	cluster bool
	crawl   string
	caFile  string
	// expireDone is --expire-done (expire.go) on the commands that end a crawl.
	expireDone time.Duration
	// held is how many connections the command's own goroutines may hold
	// at once (a worker's fetch loops each block on srq for up to a
	// second): the pool gets that many more than go-redis's default, so
	// the heartbeat never waits behind them for a connection.
	held int
}

// poolSize is the connection pool of a client whose URL did not set one.
func (r *redisFlags) poolSize() int { return 10*runtime.GOMAXPROCS(0) + r.held }

func (r *redisFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&r.url, "redis", os.Getenv("SPIDER_REDIS"), "Redis URL: redis://[user:password@]host:port/db, rediss:// for TLS (default $SPIDER_REDIS)")
	fs.BoolVar(&r.cluster, "redis-cluster", false, "the URL names Redis Cluster nodes (redis://host1:port1?addr=host2:port2)")
	fs.StringVar(&r.crawl, "crawl", "default", "crawl name: crawls with different names share one Redis without touching each other")
	fs.StringVar(&r.caFile, "redis-ca", os.Getenv("SPIDER_REDIS_CA"), "PEM file of the CA that signed the Redis server's TLS certificate (rediss:// URLs; default: the system's CAs)")
}

// bindEnding registers the connection flags and --expire-done: the Redis
// flags of the commands that end a crawl (spider crawl, spider master).
func (r *redisFlags) bindEnding(fs *pflag.FlagSet) {
	r.register(fs)
	expireDoneFlag(fs, &r.expireDone)
}

// open connects and pings. Errors never contain the password.
func (r *redisFlags) open(ctx context.Context) (redis.UniversalClient, error) {
	if r.url == "" {
		return nil, fmt.Errorf("%w: no Redis given: pass --redis redis://host:port or set SPIDER_REDIS", errUsage)
	}
	// A bad crawl name is refused before anything is created: Redis keys, or
	// a master's data directory (it used to leave spider-data/ behind). An
	// empty one is a connection made for no crawl (the §0 center's); a user's
	// --crawl "" is refused where the crawl's keys are named.
	if _, err := cluster.NewKeys(r.crawl); r.crawl != "" && err != nil {
		return nil, fmt.Errorf("%w: --crawl: %w", errUsage, err)
	}
	var rdb redis.UniversalClient
	if r.cluster {
		opt, err := redis.ParseClusterURL(r.url)
		if err != nil {
			return nil, fmt.Errorf("bad --redis URL %s: %w", redact(r.url), errors.New(redactErr(err, r.url)))
		}
		if opt.TLSConfig, err = r.tls(opt.TLSConfig); err != nil {
			return nil, err
		}
		if opt.ClientName == "" {
			opt.ClientName = clientName()
		}
		if opt.PoolSize == 0 {
			opt.PoolSize = r.poolSize()
		}
		rdb = redis.NewClusterClient(opt)
	} else {
		opt, err := redis.ParseURL(r.url)
		if err != nil {
			return nil, fmt.Errorf("bad --redis URL %s: %w", redact(r.url), errors.New(redactErr(err, r.url)))
		}
		if opt.TLSConfig, err = r.tls(opt.TLSConfig); err != nil {
			return nil, err
		}
		if opt.ClientName == "" {
			opt.ClientName = clientName()
		}
		if opt.PoolSize == 0 {
			opt.PoolSize = r.poolSize()
		}
		rdb = redis.NewClient(opt)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		rdb.Close()
		return nil, resourceError{fmt.Errorf("cannot reach Redis at %s (is redis-server running? is the password right?): %s", redact(r.url), redactErr(err, r.url))}
	}
	return rdb, nil
}

// clientName is the name every connection of this process gives itself
// (CLIENT SETNAME), so that an operator's CLIENT LIST tells which spider
// process on which host holds a connection: "spider:HOST:PID". A
// client_name in the --redis URL wins.
func clientName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	host = strings.Map(func(r rune) rune {
		if r <= ' ' || r > '~' {
			return '_'
		}
		return r
	}, host)
	return fmt.Sprintf("spider:%s:%d", host, os.Getpid())
}

// tls adds the --redis-ca authority to a rediss:// URL's TLS settings.
func (r *redisFlags) tls(cfg *tls.Config) (*tls.Config, error) {
	if r.caFile == "" {
		return cfg, nil
	}
	if cfg == nil {
		return nil, fmt.Errorf("%w: --redis-ca is for TLS: use a rediss:// URL", errUsage)
	}
	pem, err := os.ReadFile(r.caFile)
	if err != nil {
		return nil, fmt.Errorf("cannot read --redis-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--redis-ca %s holds no PEM certificate", r.caFile)
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// redact hides the password of a Redis URL.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// redactErr removes the password from an error text, in case a library
// quoted the URL.
func redactErr(err error, raw string) string {
	s := err.Error()
	if u, perr := url.Parse(raw); perr == nil {
		if pw, has := u.User.Password(); has && pw != "" {
			s = strings.ReplaceAll(s, pw, "xxxxx")
		}
	}
	return s
}
