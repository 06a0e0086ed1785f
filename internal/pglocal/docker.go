package pglocal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ory/dockertest/v3"
	"github.com/ory/dockertest/v3/docker"
)

// startDocker runs postgres:15 with dockertest when a Docker engine answers.
// A client without an engine (the usual case on these machines) fails the
// ping quickly and the caller falls back to local binaries.
func startDocker(ctx context.Context) (*Server, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, err
	}
	pool.MaxWait = 60 * time.Second
	if err := pool.Client.Ping(); err != nil {
		return nil, fmt.Errorf("pglocal: no Docker engine: %w", err)
	}
	res, err := pool.RunWithOptions(&dockertest.RunOptions{
		Repository: "postgres",
		Tag:        "15",
		Env:        []string{"POSTGRES_PASSWORD=postgres", "POSTGRES_HOST_AUTH_METHOD=trust"},
		Cmd:        []string{"postgres", "-c", "fsync=off", "-c", "max_connections=300", "-c", "max_prepared_transactions=10"},
	}, func(hc *docker.HostConfig) {
		hc.AutoRemove = true
		hc.RestartPolicy = docker.RestartPolicy{Name: "no"}
	})
	if err != nil {
		return nil, err
	}
	_ = res.Expire(3600) // a crashed run leaves nothing behind for long
	url := fmt.Sprintf("postgres://postgres:postgres@%s/postgres?sslmode=disable", res.GetHostPort("5432/tcp"))
	if err := waitReady(ctx, url, pool.MaxWait, nil); err != nil {
		return nil, errors.Join(err, pool.Purge(res))
	}
	return &Server{URL: url, stop: func() error { return pool.Purge(res) }}, nil
}
