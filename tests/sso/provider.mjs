// A real OpenID provider for the single sign-on tests: `oidc-provider` (the certified
// Node library), with a minimal sign-in page and its accounts read from a JSON file.
//
//   node provider.mjs --port 0 --client-id ID --client-secret S \
//     --redirect-uri URI --post-logout-redirect-uri URI --accounts accounts.json
//
// It listens on 127.0.0.1 only and prints one line, `listening <issuer>`, once it answers.
// The accounts file is read again at every lookup, so a test changes an account (its
// groups, or removes or disables it) by rewriting the file:
//
//   {"<sub>": {"login": "carol", "enabled": true, "claims": {"email": "...", ...},
//              "code_ttl": 1, "rewrite_id_token": {"iss": "...", "nonce": "..."}}}
//
// `code_ttl` (seconds) gives that account's authorization codes a short life, to test an
// expired code. `rewrite_id_token` models a provider that is not the one configured, or a
// replayed token: the ID token of that account's token response is signed again, with the
// provider's own key, after those claims are replaced. The relying party must then refuse
// it on the claim alone (its signature is valid). Nothing here is for production.
//
// Every page is self-contained (the library's own pages load a web font from the network).

import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

import { SignJWT, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK } from 'jose';
import Provider, { errors } from 'oidc-provider';

const { values: args } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    'client-id': { type: 'string' },
    'client-secret': { type: 'string' },
    'redirect-uri': { type: 'string' },
    'post-logout-redirect-uri': { type: 'string' },
    accounts: { type: 'string' },
  },
});
for (const name of ['client-id', 'client-secret', 'redirect-uri', 'post-logout-redirect-uri', 'accounts']) {
  if (!args[name]) {
    console.error(`provider.mjs: --${name} is required`);
    process.exit(2);
  }
}

function directory() {
  return JSON.parse(readFileSync(args.accounts, 'utf8'));
}

function activeAccount(sub) {
  const entry = directory()[sub];
  return entry && entry.enabled !== false ? entry : undefined;
}

const escapeHtml = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title, body) {
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>`
    + `<body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`;
}

// One signing key per run, kept to sign a rewritten ID token with.
const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const signingJwk = { ...(await exportJWK(privateKey)), kid: 'sso-test-key', alg: 'RS256', use: 'sig' };

const server = createServer();
await new Promise((resolve) => server.listen(Number(args.port), '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: args['client-id'],
    client_secret: args['client-secret'],
    redirect_uris: [args['redirect-uri']],
    post_logout_redirect_uris: [args['post-logout-redirect-uri']],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  jwks: { keys: [signingJwk] },
  cookies: { keys: [crypto.randomUUID()] },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['preferred_username', 'name'],
    groups: ['groups'],
  },
  scopes: ['openid', 'email', 'profile', 'groups'],
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: false },
    rpInitiatedLogout: {
      enabled: true,
      async logoutSource(ctx, form) {
        ctx.body = page('Sign out of the test provider?',
          `${form}<button type="submit" form="op.logoutForm" name="logout" value="yes">Yes, sign me out</button>`);
      },
      async postLogoutSuccessSource(ctx) {
        ctx.body = page('Signed out', '<p>You are signed out of the test provider.</p>');
      },
    },
  },
  ttl: {
    AuthorizationCode(ctx, code) {
      return directory()[code.accountId]?.code_ttl ?? 60;
    },
    AccessToken: 600,
    IdToken: 600,
    Interaction: 600,
    Session: 3600,
    Grant: 3600,
  },
  async findAccount(ctx, sub) {
    const entry = activeAccount(sub);
    if (!entry) return undefined;
    return {
      accountId: sub,
      async claims() {
        return { sub, ...(activeAccount(sub)?.claims ?? {}) };
      },
    };
  },
  async renderError(ctx, out) {
    ctx.type = 'html';
    ctx.body = page('Provider error', Object.entries(out)
      .map(([key, value]) => `<p><strong>${escapeHtml(key)}</strong>: ${escapeHtml(value)}</p>`).join(''));
  },
});

async function formBody(req) {
  let raw = '';
  for await (const chunk of req) raw += chunk;
  return new URLSearchParams(raw);
}

// Removing or disabling an account ends its sessions here, as at a real provider (the
// library itself answers server_error to a session whose account is gone, 9.13.3).
provider.use(async (ctx, next) => {
  if (ctx.path === '/auth' || ctx.path.startsWith('/auth/')) {
    const session = await provider.Session.get(ctx);
    if (session.accountId && !activeAccount(session.accountId)) await session.destroy();
  }
  return next();
});

// The sign-in and consent prompts. Consent is granted at once for what was asked.
provider.use(async (ctx, next) => {
  const match = ctx.path.match(/^\/interaction\/([\w-]+)(\/login)?$/);
  if (!match) return next();
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  const { uid, prompt, params, session } = details;
  if (prompt.name === 'login' && !match[2]) {
    ctx.type = 'html';
    ctx.body = page('Test provider sign-in',
      `<form method="post" action="/interaction/${escapeHtml(uid)}/login">`
      + '<label for="login">Login</label> <input id="login" name="login" autofocus>'
      + ' <button type="submit">Sign in</button></form>');
    return undefined;
  }
  let result;
  if (prompt.name === 'login') {
    const login = (await formBody(ctx.req)).get('login');
    const sub = Object.keys(directory()).find((key) => activeAccount(key)?.login === login);
    result = sub
      ? { login: { accountId: sub } }
      : { error: 'access_denied', error_description: 'unknown or disabled account' };
  } else if (prompt.name === 'consent') {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    grant.addOIDCScope(params.scope);
    result = { consent: { grantId: await grant.save() } };
  } else {
    throw new errors.InvalidRequest(`unexpected prompt ${prompt.name}`);
  }
  ctx.redirect(await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: false }));
  return undefined;
});

// The token response, with the ID token of an account that asks for it signed again.
provider.use(async (ctx, next) => {
  await next();
  const idToken = ctx.path === '/token' && ctx.status === 200 ? ctx.body?.id_token : undefined;
  if (!idToken) return;
  const claims = decodeJwt(idToken);
  const rewrite = directory()[claims.sub]?.rewrite_id_token;
  if (!rewrite) return;
  const key = await importJWK(signingJwk, 'RS256');
  ctx.body = {
    ...ctx.body,
    id_token: await new SignJWT({ ...claims, ...rewrite })
      .setProtectedHeader(decodeProtectedHeader(idToken))
      .sign(key),
  };
});

// The library keeps its own errors to itself; a test reading this output needs them.
provider.on('server_error', (ctx, error) => console.error('server_error', error));

server.on('request', provider.callback());
console.log(`listening ${issuer}`);
