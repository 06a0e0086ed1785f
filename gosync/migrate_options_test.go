package gosync

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestMigrateOptions: options are parsed once, in order, by newMigrateConfig
// (NewMigrator, Migrate through it, GrantVersionTable), and an option with
// a bad value fails the call with ErrInvalidArgument before the pool is
// touched (nil here: touching it would panic).
func TestMigrateOptions(t *testing.T) {
	cfg, err := newMigrateConfig([]MigrateOption{WithVersionTable("app_gosync"), WithOwner("gosync_owner"),
		WithLockTimeout(0), WithForeignSchemaOwner(), WithVersionTable("later_wins")})
	if err != nil {
		t.Fatal(err)
	}
	want := migrateConfig{versionTable: "later_wins", owner: "gosync_owner", lockTimeout: 0, foreignSchemaOwner: true}
	if cfg != want {
		t.Fatalf("config %+v, want %+v", cfg, want)
	}
	if cfg, err := newMigrateConfig(nil); err != nil || cfg.versionTable != DefaultVersionTable || cfg.lockTimeout != DefaultLockTimeout || cfg.owner != "" {
		t.Fatalf("defaults %+v, %v", cfg, err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		opt     MigrateOption
		mention string
	}{
		{WithVersionTable("Goose-Table"), `version table "Goose-Table" is not a plain lower-case identifier`},
		{WithVersionTable(""), `version table "" is not a plain lower-case identifier`},
		{WithOwner(""), `owner role "" is empty`},
		{WithOwner(strings.Repeat("r", 64)), "too long"},
		{WithLockTimeout(-time.Second), "lock timeout -1s is negative"},
		{nil, "migrate option 1 is nil"},
	} {
		opts := []MigrateOption{WithLockTimeout(time.Second), tc.opt}
		_, errNew := NewMigrator(ctx, nil, opts...)
		_, errMigrate := Migrate(ctx, nil, opts...)
		errGrant := GrantVersionTable(ctx, nil, opts...)
		for what, err := range map[string]error{"NewMigrator": errNew, "Migrate": errMigrate, "GrantVersionTable": errGrant} {
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("%s with %q: %v, want ErrInvalidArgument mentioning %q", what, tc.mention, err, tc.mention)
			}
		}
	}
}
