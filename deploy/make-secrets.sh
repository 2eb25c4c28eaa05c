#!/bin/sh
# Random secrets for deploy/compose.yaml, one file each under deploy/secrets/ (ignored by git).
# Existing files are kept, so running it again changes nothing. Stripe's keys are yours to add.
# The files are 0644 inside a 0700 directory: on the host only its owner reaches them; compose
# bind-mounts each file into the one service that needs it, where the app's user (10001) reads it.
set -eu
cd "$(dirname "$0")"
mkdir -p secrets
chmod 700 secrets
random() { head -c 48 /dev/urandom | base64 | tr -d '\n/+=' ; }
put() { [ -s "secrets/$1" ] || { printf "%s" "$2" > "secrets/$1"; chmod 644 "secrets/$1"; }; }
put postgres_password "$(random)"
put database_url "postgres://fleet:$(cat secrets/postgres_password)@postgres:5432/fleet"
put metrics_token "$(random)"
put jwt_secret "$(random)"
put webhook_encryption_key "$(random)"
put access_password_key "$(random)"
put stripe_webhook_secret "whsec_$(random)"
[ -s secrets/stripe_secret_key ] || echo "deploy/secrets/stripe_secret_key: put your Stripe secret key (sk_...) there" >&2
[ -s secrets/tunnel_ssh_key ] || { ssh-keygen -q -t ed25519 -N "" -C fleet-agent -f secrets/tunnel_ssh_key; chmod 644 secrets/tunnel_ssh_key; }
echo "TUNNEL_SSH_PUBLIC_KEY=$(cut -d' ' -f1,2 secrets/tunnel_ssh_key.pub)"
