package pgtest

import (
	"fmt"
	"net/url"
	"strings"
)

// replaceDatabase points a postgres:// URL or a key=value DSN at another
// database.
func replaceDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", err
		}
		u.Path = "/" + name
		return u.String(), nil
	}
	if strings.Contains(dsn, "=") {
		return dsn + " dbname=" + name, nil // the last dbname wins
	}
	return "", fmt.Errorf("pgtest: cannot point %q at another database", redact(dsn))
}

// redact hides a URL's password in error messages.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
