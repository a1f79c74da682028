package main

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/bench/internal/redisproc"
)

// redisServer is a redis-server process owned by the benchmark
// (bench/internal/redisproc), with the short names this file uses.
type redisServer struct {
	*redisproc.Server
	rdb  *redis.Client
	addr string
}

// startRedis starts redis-server on a free loopback port in dir.
func startRedis(ctx context.Context, dir string) (*redisServer, error) {
	s, err := redisproc.Start(ctx, dir)
	if err != nil {
		return nil, err
	}
	return &redisServer{Server: s, rdb: s.Client, addr: s.Addr}, nil
}

// close shuts the server down and waits for it.
func (s *redisServer) close() { s.Close() }
