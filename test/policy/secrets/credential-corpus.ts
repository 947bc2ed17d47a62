/**
 * A corpus of credential formats (docs/security.md, "The corpus"): each entry names a format, says
 * where it is seen, and builds a realistic but **fake** value in that place. Values are generated
 * at run time from a seeded generator and assembled from parts, so no credential — real or
 * shaped like one — is written in this file (GitHub push protection and secret scanners see none).
 * The formats are issue 30's 76 plus those the detector knew before, plus the boundaries: glued to
 * a word, wrapped over lines, inside base64.
 *
 * `benignTwins` are the look-alikes that must stay readable: hashes, IDs, images, lock files.
 */
import { createHash } from "node:crypto";

/** One credential in its place: `text` is what a tool prints or is given, `secret` what must not be logged. */
export interface CorpusEntry {
  format: string;
  seenIn: string;
  text: string;
  secret: string;
  /**
   * The pieces of the secret as `text` holds them, each of which must stay out of the log: the
   * secret itself, or its lines when it is wrapped (a PEM body, a key wrapped at 64 or 76 columns),
   * so that a block redacted by half counts as leaked.
   */
  parts: string[];
}

const upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const lower = "abcdefghijklmnopqrstuvwxyz";
const digits = "0123456789";
const alnum = upper + lower + digits;
const hexDigits = "0123456789abcdef";
const base64Alphabet = `${alnum}+/`;
const base64Url = `${alnum}_-`;

/** Deterministic pseudo-random characters: the same corpus on every run, no two entries alike. */
function generator(seed: string): (alphabet: string, length: number) => string {
  let counter = 0;
  let pool = Buffer.alloc(0);
  let offset = 0;
  const nextByte = (): number => {
    if (offset >= pool.length) {
      pool = createHash("sha256").update(`${seed}:${counter++}`).digest();
      offset = 0;
    }
    return pool[offset++]!;
  };
  return (alphabet, length) => {
    let out = "";
    while (out.length < length) out += alphabet[nextByte() % alphabet.length];
    return out;
  };
}

/** `prefix` + `separator` + `body`: prefixes are kept apart in the source. */
const join = (...parts: string[]): string => parts.join("");

const pem = (label: string, seed: string): string => {
  const random = generator(seed);
  const body = Array.from({ length: 12 }, () => random(base64Alphabet, 64)).join("\n");
  return [`-----BEGIN ${label}-----`, body, `-----END ${label}-----`].join("\n");
};

type Build = (random: (alphabet: string, length: number) => string) => { secret: string; text: (secret: string) => string; wrap?: number };

const formats: [format: string, seenIn: string, build: Build][] = [
  // Formats the detector knew before issue 30.
  ["OpenAI project key", ".env", (r) => ({ secret: join("sk-", "proj-", r(base64Url, 48), r(digits, 4)), text: (s) => `OPENAI_API_KEY=${s}` })],
  ["OpenAI legacy key", "Python source", (r) => ({ secret: join("sk", "-", r(alnum, 44), r(digits, 4)), text: (s) => `client = OpenAI(api_key="${s}")` })],
  ["Anthropic API key", "shell history", (r) => ({ secret: join("sk-ant-", "api03-", r(base64Url, 89), r(digits, 4), "AA"), text: (s) => `curl https://api.anthropic.com/v1/messages -H "x-api-key: ${s}"` })],
  ["Anthropic admin key", "a log line", (r) => ({ secret: join("sk-ant-", "admin01-", r(base64Url, 89), r(digits, 4), "AA"), text: (s) => `using admin key ${s} for org settings` })],
  ["GitHub classic PAT", "git remote -v", (r) => ({ secret: join("gh", "p_", r(alnum, 32), r(digits, 4)), text: (s) => `origin\thttps://${s}@github.com/team/app.git (fetch)` })],
  ["GitHub OAuth token", "gh auth status", (r) => ({ secret: join("gh", "o_", r(alnum, 32), r(digits, 4)), text: (s) => `  - Token: ${s}` })],
  ["GitHub app installation token", "CI log", (r) => ({ secret: join("gh", "s_", r(alnum, 32), r(digits, 4)), text: (s) => `Using installation token ${s}` })],
  ["GitHub user-to-server token", "JSON response", (r) => ({ secret: join("gh", "u_", r(alnum, 32), r(digits, 4)), text: (s) => `{"token_type":"bearer","access":"${s}"}` })],
  ["GitHub refresh token", "JSON response", (r) => ({ secret: join("gh", "r_", r(alnum, 32), r(digits, 4)), text: (s) => `{"refresh":"${s}","expires_in":15811200}` })],
  ["GitHub fine-grained PAT", ".env", (r) => ({ secret: join("github", "_pat_", r(alnum, 20), r(digits, 2), "_", r(alnum, 55), r(digits, 4)), text: (s) => `GH_TOKEN=${s}` })],
  ["GitLab PAT", "git config", (r) => ({ secret: join("gl", "pat-", r(alnum, 16), r(digits, 4)), text: (s) => `[http]\n\textraHeader = PRIVATE-TOKEN: ${s}` })],
  ["GitLab deploy token", "CI variables dump", (r) => ({ secret: join("gl", "dt-", r(alnum, 16), r(digits, 4)), text: (s) => `deploy credentials ${s}` })],
  ["GitLab runner token", "config.toml", (r) => ({ secret: join("gl", "rt-", r(alnum, 16), r(digits, 4)), text: (s) => `  token = "${s}"` })],
  ["GitLab pipeline trigger token", "curl", (r) => ({ secret: join("gl", "ptt-", r(hexDigits, 40)), text: (s) => `curl -X POST -F ref=main -F tok=${s} https://gitlab.example.com/api/v4/projects/1/trigger/pipeline` })],
  ["Slack bot token", "Python source", (r) => ({ secret: join("xo", "xb-", r(digits, 12), "-", r(digits, 13), "-", r(alnum, 24)), text: (s) => `app = App(token="${s}")` })],
  ["Slack user token", "a log line", (r) => ({ secret: join("xo", "xp-", r(digits, 12), "-", r(digits, 12), "-", r(digits, 13), "-", r(hexDigits, 32)), text: (s) => `slack: auth as ${s}` })],
  ["Slack app-level token", ".env", (r) => ({ secret: join("xa", "pp-1-", "A0", r(upper + digits, 9), "-", r(digits, 13), "-", r(hexDigits, 64)), text: (s) => `SLACK_APP=${s}` })],
  ["Slack webhook URL", "curl", (r) => ({ secret: join("T0", r(upper + digits, 8), "/B0", r(upper + digits, 8), "/", r(alnum, 24)), text: (s) => `curl -X POST -d @msg.json https://hooks.slack.com/services/${s}` })],
  ["AWS access key ID", "~/.aws/credentials", (r) => ({ secret: join("AK", "IA", r("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)), text: (s) => `[default]\naws_access_key_id = ${s}` })],
  ["AWS secret access key", "~/.aws/credentials", (r) => ({ secret: r(base64Alphabet, 36) + r(digits, 4), text: (s) => `aws_secret_access_key = ${s}` })],
  ["AWS session token", "env output", (r) => ({ secret: join("IQoJb3JpZ2luX2Vj", r(base64Alphabet, 200)), text: (s) => `AWS_SESSION_TOKEN=${s}` })],
  ["Google API key", "JavaScript source", (r) => ({ secret: join("AI", "za", "Sy", r(base64Url, 29), r(digits, 4)), text: (s) => `const firebaseConfig = { apiKey: "${s}", projectId: "demo" };` })],
  ["Google OAuth client secret", "client_secret.json", (r) => ({ secret: join("GOC", "SPX-", r(base64Url, 24), r(digits, 4)), text: (s) => `{"installed":{"client_id":"1234-abc.apps.googleusercontent.com","client_secret":"${s}"}}` })],
  ["Google OAuth refresh token", "gcloud credentials", (r) => ({ secret: join("1//0", "g", r(base64Url, 96), r(digits, 4)), text: (s) => `refresh: ${s}` })],
  ["Google OAuth access token", "a log line", (r) => ({ secret: join("ya", "29.", "a0A", r(base64Url, 150), r(digits, 4)), text: (s) => `GET /drive/v3/files with ${s}` })],
  ["GCP service account key", "key.json", (r) => ({ secret: pem("PRIVATE KEY", r(alnum, 8)), text: (s) => JSON.stringify({ type: "service_account", project_id: "demo", private_key: s }, null, 2) })],
  ["Stripe live secret key", "Ruby source", (r) => ({ secret: join("sk", "_live_", r(alnum, 20), r(digits, 4)), text: (s) => `Stripe.api_key = '${s}'` })],
  ["Stripe restricted key", "a log line", (r) => ({ secret: join("rk", "_live_", r(alnum, 20), r(digits, 4)), text: (s) => `charging with ${s}` })],
  ["Stripe webhook secret", "stripe listen", (r) => ({ secret: join("wh", "sec_", r(alnum, 28), r(digits, 4)), text: (s) => `Ready! Your webhook signing secret is ${s} (^C to quit)` })],
  ["Twilio API key", "Node source", (r) => ({ secret: join("S", "K", r(hexDigits, 32)), text: (s) => `twilio(${JSON.stringify("x")}, ${JSON.stringify("y")}, { accountSid: "x" }); // ${s}` })],
  ["Twilio account SID and auth token", "Python source", (r) => ({ secret: r(hexDigits, 32), text: (s) => `Client("AC${"0".repeat(2)}${"1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c"}", "${s}")` })],
  ["SendGrid API key", "Python source", (r) => ({ secret: join("S", "G.", r(base64Url, 22), ".", r(base64Url, 39), r(digits, 4)), text: (s) => `sg = SendGridAPIClient("${s}")` })],
  ["Mailgun private key", ".env", (r) => ({ secret: join("key-", r(hexDigits, 32)), text: (s) => `MAILGUN_API_KEY=${s}` })],
  ["Mailgun key in code", "Python source", (r) => ({ secret: join("key-", r(hexDigits, 32)), text: (s) => `requests.post(url, auth=("api", "${s}"))  # mailgun` })],
  ["Mailchimp API key", "PHP source", (r) => ({ secret: join(r(hexDigits, 32), "-us", r(digits, 2)), text: (s) => `$mailchimp_api = '${s}';` })],
  ["npm token", ".npmrc", (r) => ({ secret: join("np", "m_", r(alnum, 32), r(digits, 4)), text: (s) => `//registry.npmjs.org/:_authToken=${s}` })],
  ["PyPI upload token", ".pypirc", (r) => ({ secret: join("py", "pi-", "AgEIcHlwaS5vcmc", r(base64Url, 150)), text: (s) => `[pypi]\n  username = __token__\n  password = ${s}` })],
  ["RubyGems API key", "~/.gem/credentials", (r) => ({ secret: join("ruby", "gems_", r(hexDigits, 48)), text: (s) => `---\n:rubygems_api_key: ${s}` })],
  ["Hugging Face token", "notebook output", (r) => ({ secret: join("h", "f_", r(upper + lower, 34)), text: (s) => `login(token="${s}")` })],
  ["Shopify admin token", "a log line", (r) => ({ secret: join("shp", "at_", r(hexDigits, 32)), text: (s) => `X-Shopify-Access-Token: ${s}` })],
  ["Shopify shared secret", "config", (r) => ({ secret: join("shp", "ss_", r(hexDigits, 32)), text: (s) => `shared secret ${s}` })],
  ["Linear API key", "a log line", (r) => ({ secret: join("lin", "_api_", r(alnum, 36), r(digits, 4)), text: (s) => `linear client created with ${s}` })],
  ["1Password service account token", "CI variables", (r) => ({ secret: join("op", "s_eyJ", r(base64Alphabet, 300)), text: (s) => `export OP_SERVICE_ACCOUNT=${s}` })],
  ["Azure storage connection string", "appsettings.json", (r) => ({ secret: `${r(base64Alphabet, 84)}==`, text: (s) => `"Storage": "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=${s};EndpointSuffix=core.windows.net"` })],
  ["Azure AD client secret", "a log line", (r) => ({ secret: join(r(alnum, 3), "8Q~", r(base64Url, 34)), text: (s) => `az login --service-principal -u app-id -p ${s} --tenant t` })],
  ["PEM RSA private key", "cat id_rsa", (r) => ({ secret: pem("RSA PRIVATE KEY", r(alnum, 8)), text: (s) => `$ cat ~/.ssh/id_rsa\n${s}\n` })],
  ["PEM OpenSSH private key", "cat id_ed25519", (r) => ({ secret: pem("OPENSSH PRIVATE KEY", r(alnum, 8)), text: (s) => s })],
  ["PEM EC private key", "a TLS directory", (r) => ({ secret: pem("EC PRIVATE KEY", r(alnum, 8)), text: (s) => `tls.key:\n${s}` })],
  ["JWT", "a cookie", (r) => ({ secret: join("eyJhbGciOiJIUzI1NiJ9", ".", "eyJzdWIiOiI", r(base64Url, 40), ".", r(base64Url, 43)), text: (s) => `Set-Cookie-Value ${s}` })],
  ["Authorization: Bearer", "curl -v", (r) => ({ secret: r(alnum, 40), text: (s) => `> Authorization: Bearer ${s}` })],
  ["Authorization: Basic", "HTTP request", (r) => ({ secret: Buffer.from(`admin:${r(alnum, 16)}`).toString("base64"), text: (s) => `Authorization: Basic ${s}` })],
  ["database URL with password", ".env", (r) => ({ secret: `app:${r(alnum, 20)}`, text: (s) => `DATABASE_URL=postgres://${s}@db.internal:5432/app` })],
  ["Redis URL with password", "docker-compose.yml", (r) => ({ secret: `:${r(alnum, 24)}`, text: (s) => `      REDIS_URL: redis://${s}@cache:6379/0` })],
  ["access_token query parameter", "an access log", (r) => ({ secret: r(alnum, 32), text: (s) => `GET /api/items?access_token=${s}&page=2 HTTP/1.1` })],
  ["secret-named JSON field", "a config dump", (r) => ({ secret: r(alnum, 24), text: (s) => `{"db": {"user": "app", "password": "${s}"}}` })],
  ["NAME_SECRET=value", ".env", (r) => ({ secret: r(alnum, 32), text: (s) => `SESSION_SECRET=${s}` })],
  ["mysql -p<password>", "shell history", (r) => ({ secret: r(alnum, 14), text: (s) => `mysql -u root -p${s} app < dump.sql` })],
  ["curl -u user:password", "shell history", (r) => ({ secret: `deploy:${r(alnum, 18)}`, text: (s) => `curl -u ${s} https://ci.example.com/api/json` })],
  // Issue 30's further formats.
  ["DigitalOcean PAT", "doctl config", (r) => ({ secret: join("do", "p_v1_", r(hexDigits, 64)), text: (s) => `access-token: ${s}` })],
  ["DigitalOcean OAuth token", "a log line", (r) => ({ secret: join("do", "o_v1_", r(hexDigits, 64)), text: (s) => `oauth ${s}` })],
  ["Databricks token", "~/.databrickscfg", (r) => ({ secret: join("da", "pi", r(hexDigits, 32)), text: (s) => `[DEFAULT]\nhost = https://x.cloud.databricks.com\ntok = ${s}` })],
  ["Atlassian API token", "a log line", (r) => ({ secret: join("ATA", "TT3xFfGF0", r(base64Url, 180)), text: (s) => `jira user bob@example.com token ${s}` })],
  ["Doppler token", "a log line", (r) => ({ secret: join("dp", ".pt.", r(alnum, 43)), text: (s) => `doppler run --token ${s} -- npm start` })],
  ["Vault service token", "vault login output", (r) => ({ secret: join("hv", "s.", r(base64Url, 92)), text: (s) => `token                ${s}\ntoken_accessor       x` })],
  ["Vault batch token", "a log line", (r) => ({ secret: join("hv", "b.", r(base64Url, 150)), text: (s) => `issued ${s}` })],
  ["Vault legacy token", "a log line", (r) => ({ secret: join("s", ".", r(alnum, 20), r(digits, 4)), text: (s) => `VAULT_TOK ${s}` })],
  ["age secret key", "key.txt", (r) => ({ secret: join("AGE-", "SECRET-KEY-1", r("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)), text: (s) => `# created: 2025-01-01\n# public key: age1xyz\n${s}` })],
  ["Postman API key", "a log line", (r) => ({ secret: join("PM", "AK-", r(hexDigits, 24), "-", r(hexDigits, 34)), text: (s) => `postman key ${s}` })],
  ["Grafana Cloud token", "a log line", (r) => ({ secret: join("gl", "c_", r(base64Alphabet, 60), "=="), text: (s) => `grafana cloud ${s}` })],
  ["Grafana service account token", "a log line", (r) => ({ secret: join("gl", "sa_", r(alnum, 32), "_", r(hexDigits, 8)), text: (s) => `sa token ${s}` })],
  ["Sentry user token", "a log line", (r) => ({ secret: join("snt", "ryu_", r(hexDigits, 64)), text: (s) => `sentry-cli --auth ${s} releases list` })],
  ["Sentry auth token", ".sentryclirc", (r) => ({ secret: join("snt", "rys_", "eyJpYXQiO", r(base64Alphabet, 60)), text: (s) => `[auth]\ntoken=${s}` })],
  ["Square access token", "a log line", (r) => ({ secret: join("sq0", "atp-", r(base64Url, 22)), text: (s) => `square ${s}` })],
  ["Square production token", "a log line", (r) => ({ secret: join("EA", "AA", r(base64Url, 60)), text: (s) => `square prod ${s}` })],
  ["PlanetScale token", "a log line", (r) => ({ secret: join("pscale", "_tkn_", r(base64Url, 43)), text: (s) => `pscale auth ${s}` })],
  ["PlanetScale password", "connection string", (r) => ({ secret: join("pscale", "_pw_", r(base64Url, 43)), text: (s) => `mysql://user:${s}@aws.connect.psdb.cloud/db` })],
  ["Supabase access token", "a log line", (r) => ({ secret: join("sb", "p_", r(hexDigits, 40)), text: (s) => `supabase login --tok ${s}` })],
  ["Supabase secret key", "a log line", (r) => ({ secret: join("sb_", "secret_", r(base64Url, 32)), text: (s) => `createClient(url, "${s}")` })],
  ["Fly.io token", "a log line", (r) => ({ secret: join("fo", "1_", r(base64Url, 43)), text: (s) => `flyctl deploy -t ${s}` })],
  ["Terraform Cloud token", "~/.terraformrc", (r) => ({ secret: join(r(alnum, 14), ".atlas", "v1.", r(base64Url, 67)), text: (s) => `credentials "app.terraform.io" {\n  tok = "${s}"\n}` })],
  ["Pulumi access token", "a log line", (r) => ({ secret: join("pu", "l-", r(hexDigits, 40)), text: (s) => `pulumi login with ${s}` })],
  ["Netlify token", "netlify.toml", (r) => ({ secret: r(base64Url, 43), text: (s) => `netlify_auth = "${s}"` })],
  ["Netlify token on a command line", "shell history", (r) => ({ secret: join("nfp_", r(alnum, 36)), text: (s) => `netlify deploy --prod --auth ${s}` })],
  ["Discord bot token", "JavaScript source", (r) => ({ secret: join("MT", r(base64Url, 24), ".", r(base64Url, 6), ".", r(base64Url, 38)), text: (s) => `client.login("${s}");` })],
  ["Discord webhook URL", "a log line", (r) => ({ secret: join(r(digits, 18), "/", r(base64Url, 68)), text: (s) => `POST https://discord.com/api/webhooks/${s}` })],
  ["Telegram bot token", "Python source", (r) => ({ secret: join(r(digits, 10), ":AA", r(base64Url, 33)), text: (s) => `bot = Bot("${s}")` })],
  ["Notion integration token", "a log line", (r) => ({ secret: join("nt", "n_", r(digits, 11), r(alnum, 35)), text: (s) => `notion client ${s}` })],
  ["Airtable PAT", "curl", (r) => ({ secret: join("pa", "t", r(alnum, 14), ".", r(hexDigits, 64)), text: (s) => `curl https://api.airtable.com/v0/app/t -H "Authorization: Bearer ${s}"` })],
  ["Figma PAT", "a log line", (r) => ({ secret: join("fi", "gd_", r(base64Url, 40)), text: (s) => `figma export --tok ${s}` })],
  ["New Relic user key", "newrelic.yml", (r) => ({ secret: join("NR", "AK-", r(upper + digits, 27)), text: (s) => `new_relic_user: ${s}` })],
  ["New Relic insert key", "a log line", (r) => ({ secret: join("NR", "II-", r(base64Url, 32)), text: (s) => `newrelic insert ${s}` })],
  ["Alibaba AccessKey ID", "a log line", (r) => ({ secret: join("LT", "AI", r(alnum, 20)), text: (s) => `aliyun configure --access-key-id ${s}` })],
  ["Alibaba AccessKey secret", "a config file", (r) => ({ secret: r(alnum, 30), text: (s) => `alibaba_secret = ${s}` })],
  ["Tencent Cloud SecretId", "a log line", (r) => ({ secret: join("AK", "ID", r(alnum, 28), r(digits, 4)), text: (s) => `tccli configure set secretId ${s}` })],
  ["Tencent Cloud SecretKey", "a config file", (r) => ({ secret: r(alnum, 32), text: (s) => `SecretKey: ${s}` })],
  ["Groq API key", "a log line", (r) => ({ secret: join("gs", "k_", r(alnum, 48), r(digits, 4)), text: (s) => `groq = Groq(${s})` })],
  ["xAI API key", "a log line", (r) => ({ secret: join("xa", "i-", r(alnum, 76), r(digits, 4)), text: (s) => `grok client ${s}` })],
  ["Replicate token", "a log line", (r) => ({ secret: join("r", "8_", r(alnum, 33), r(digits, 2), "Q", "a"), text: (s) => `replicate.Client(${s})` })],
  ["Perplexity API key", "a log line", (r) => ({ secret: join("pp", "lx-", r(alnum, 48)), text: (s) => `pplx client ${s}` })],
  ["Facebook access token", "a log line", (r) => ({ secret: join("EA", "AB", r(alnum, 120), r(digits, 4)), text: (s) => `graph.facebook.com/me?fields=id&tok=${s}` })],
  ["Facebook page token", "a log line", (r) => ({ secret: join("EA", "AC", r(alnum, 120)), text: (s) => `page ${s}` })],
  ["Twitter bearer token", "a log line", (r) => ({ secret: join("A".repeat(22), r(alnum, 60), "%3D", r(alnum, 30)), text: (s) => `client = tweepy.Client(${s})` })],
  ["Twitter API secret", ".env", (r) => ({ secret: r(alnum, 50), text: (s) => `TWITTER_API_SECRET=${s}` })],
  ["Ethereum private key in .env", ".env", (r) => ({ secret: `0x${r(hexDigits, 64)}`, text: (s) => `PRIVATE_KEY=${s}` })],
  ["Ethereum private key on a command line", "cast send", (r) => ({ secret: `0x${r(hexDigits, 64)}`, text: (s) => `cast send 0xabc "f()" --private-key ${s} --rpc-url http://localhost:8545` })],
  ["PuTTY private key", "key.ppk", (r) => ({ secret: r(base64Alphabet, 64), text: (s) => `PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: bob\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAI\nAAAAB3Nza\nPrivate-Lines: 1\n${s}\nPrivate-MAC: ${"0".repeat(2)}${"ab".repeat(31)}` })],
  ["kubeconfig client-key-data", "~/.kube/config", (r) => ({ secret: Buffer.from(`${pem("RSA PRIVATE KEY", r(alnum, 8))}\n`).toString("base64"), text: (s) => `users:\n- name: admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTg==\n    client-key-data: ${s}\n` })],
  ["kubeconfig token", "~/.kube/config", (r) => ({ secret: join("eyJhbGciOiJSUzI1NiIsImtpZCI6Ik", r(base64Url, 20), ".", "eyJpc3MiOi", r(base64Url, 120), ".", r(base64Url, 86)), text: (s) => `    token: ${s}` })],
  ["Docker auths", "~/.docker/config.json", (r) => ({ secret: Buffer.from(`bob:${r(alnum, 20)}`).toString("base64"), text: (s) => `{"auths": {"registry.example.com": {"auth": "${s}"}}}` })],
  ["sshpass -p", "shell history", (r) => ({ secret: r(alnum, 16), text: (s) => `sshpass -p ${s} ssh deploy@10.0.0.5 uptime` })],
  ["docker login -p", "CI log", (r) => ({ secret: r(alnum, 20), text: (s) => `docker login -u ci -p ${s} registry.example.com` })],
  ["openssl -passin", "shell history", (r) => ({ secret: r(alnum, 18), text: (s) => `openssl rsa -in key.pem -passin pass:${s} -out plain.pem` })],
  [".netrc line", "~/.netrc", (r) => ({ secret: r(alnum, 22), text: (s) => `machine api.example.com login bob password ${s}` })],
  [".netrc block", "~/.netrc", (r) => ({ secret: r(alnum, 22), text: (s) => `machine git.example.com\n  login bob\n  password ${s}\n` })],
  ["Heroku API key", "a log line", (r) => ({ secret: join("HR", "KU-AA", r(base64Url, 58)), text: (s) => `heroku ${s}` })],
  ["Dynatrace token", "a log line", (r) => ({ secret: join("dt0", "c01.", r(upper + digits, 24), ".", r(alnum, 64)), text: (s) => `dynatrace ${s}` })],
  ["Clojars token", "a log line", (r) => ({ secret: join("CLO", "JARS_", r(lower + digits, 60)), text: (s) => `deploy with ${s}` })],
  ["Brevo (Sendinblue) key", "a log line", (r) => ({ secret: join("xkey", "sib-", r(hexDigits, 64), "-", r(alnum, 16)), text: (s) => `brevo ${s}` })],
  ["Okta API token", "a config file", (r) => ({ secret: join("00", r(base64Url, 40)), text: (s) => `okta_api_token = "${s}"` })],
  ["Cloudflare API token", ".env", (r) => ({ secret: r(base64Url, 40), text: (s) => `CLOUDFLARE_API_TOKEN=${s}` })],
  ["Datadog API key", "a config file", (r) => ({ secret: r(hexDigits, 32), text: (s) => `datadog_api_key: ${s}` })],
  ["Mapbox secret token", "a log line", (r) => ({ secret: join("sk.", "eyJ1Ijoi", r(base64Url, 40), ".", r(base64Url, 22)), text: (s) => `mapbox ${s}` })],
  // Boundaries: glued to a word, wrapped over lines, inside base64.
  ["OpenAI key glued to a word", "a backup file name", (r) => ({ secret: join("sk-", "proj-", r(base64Url, 44), r(digits, 4)), text: (s) => `restored backup-${s}.txt` })],
  ["GitHub PAT glued to a word", "a variable dump", (r) => ({ secret: join("gh", "p_", r(alnum, 32), r(digits, 4)), text: (s) => `old_${s}` })],
  ["Slack token glued to a word", "a variable dump", (r) => ({ secret: join("xo", "xb-", r(digits, 12), "-", r(digits, 13), "-", r(alnum, 24)), text: (s) => `bot_${s}` })],
  ["AWS key ID glued to a word", "a log line", (r) => ({ secret: join("AK", "IA", r("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)), text: (s) => `key${s} rotated` })],
  ["Anthropic key wrapped at 64 columns", "a pasted note", (r) => ({ secret: join("sk-ant-", "api03-", r(base64Url, 89), r(digits, 4), "AA"), text: (s) => `key:\n${s.match(/.{1,64}/g)!.join("\n")}\n`, wrap: 64 })],
  ["PyPI token wrapped at 76 columns", "an e-mail", (r) => ({ secret: join("py", "pi-", "AgEIcHlwaS5vcmc", r(base64Url, 160)), text: (s) => s.match(/.{1,76}/g)!.join("\r\n"), wrap: 76 })],
  ["private key in a JSON string", "a secret manager's JSON", (r) => ({ secret: pem("PRIVATE KEY", r(alnum, 8)), text: (s) => JSON.stringify({ name: "tls", value: s }) })],
  ["base64'd .env", "kubectl get secret -o yaml", (r) => ({ secret: Buffer.from(`NODE_ENV=production\nSTRIPE_SECRET=${join("sk", "_live_", r(alnum, 24))}\n`).toString("base64"), text: (s) => `apiVersion: v1\nkind: Secret\ndata:\n  env: ${s}\n` })],
  ["base64 PEM in a Secret manifest", "kubectl get secret -o yaml", (r) => ({ secret: Buffer.from(pem("EC PRIVATE KEY", r(alnum, 8))).toString("base64"), text: (s) => `data:\n  tls.key: ${s}\n` })],
  ["base64 wrapped at 76 columns", "base64 < .env", (r) => ({ secret: Buffer.from(`API_TOKEN=${r(alnum, 40)}\nDB_PASSWORD=${r(alnum, 24)}\nREGION=eu\n`).toString("base64"), text: (s) => s.match(/.{1,76}/g)!.join("\n"), wrap: 76 })],
];

/** The corpus: every format built with its own seed. */
export const credentialCorpus: readonly CorpusEntry[] = formats.map(([format, seenIn, build]) => {
  const { secret, text, wrap } = build(generator(format));
  let parts = [secret];
  if (wrap !== undefined) parts = secret.match(new RegExp(`.{1,${wrap}}`, "g"))!;
  else if (secret.includes("\n")) parts = secret.split("\n").filter((line) => !line.startsWith("-----"));
  return { format, seenIn, secret, parts, text: text(secret) };
});

/** Look-alikes that carry no secret, each as a tool prints it: they must stay readable. */
export const benignTwins: readonly { name: string; text: string }[] = (() => {
  const random = generator("benign twins");
  const sha1 = createHash("sha1").update("twin").digest("hex");
  const sha256 = createHash("sha256").update("twin").digest("hex");
  const sha512 = createHash("sha512").update("twin").digest("hex");
  const integrity = `sha512-${createHash("sha512").update("package").digest("base64")}`;
  const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), createHash("sha512").update("image").digest(), createHash("sha512").update("image2").digest()]).toString("base64");
  const certificateBody = createHash("sha512").update("cert").digest("base64").repeat(4);
  return [
    { name: "git SHA-1", text: `commit ${sha1}\nAuthor: Ada <ada@example.com>` },
    { name: "git SHA-256 object name", text: `tree ${sha256}` },
    { name: "SHAs one per line", text: Array.from({ length: 6 }, (_, index) => createHash("sha1").update(String(index)).digest("hex")).join("\n") },
    { name: "sha256 digest", text: `${sha256}  dist/turnlog.tgz` },
    { name: "sha512 digest", text: `SHA512 (release.tar.gz) = ${sha512}` },
    { name: "UUID", text: `request 9f89416f-5441-4430-9d9f-a419b1a132d8 done` },
    { name: "container image digest", text: `node@sha256:${sha256}` },
    { name: "base64 PNG data URL", text: `<img src="data:image/png;base64,${png}">` },
    { name: "base64 image wrapped at 76 columns", text: png.repeat(3).match(/.{1,76}/g)!.join("\n") },
    { name: "npm integrity string", text: `"integrity": "${integrity}"` },
    {
      name: "package-lock.json entry",
      text: `"node_modules/left-pad": {\n  "version": "1.3.0",\n  "resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz",\n  "integrity": "${integrity}",\n  "license": "WTFPL"\n}`,
    },
    { name: "yarn.lock entry", text: `left-pad@^1.3.0:\n  version "1.3.0"\n  resolved "https://registry.yarnpkg.com/left-pad/-/left-pad-1.3.0.tgz#${sha1}"\n  integrity ${integrity}` },
    { name: "go.sum line", text: `golang.org/x/text v0.14.0 h1:${createHash("sha256").update("go").digest("base64")}` },
    { name: "long identifiers in code", text: "const tokenEstimatorCacheForModelFamily = createTokenEstimatorCacheForModelFamily(passwordPolicyValidatorOptions);" },
    { name: "TypeScript declaration", text: "interface Settings { apiKey: string; secretName?: string; accessTokenTtlSeconds: number }" },
    { name: "test runner output", text: " ✓ test/history/token-estimator.test.ts (12 tests) 31ms\n ✓ test/policy/secrets/secret-detector.test.ts (83 tests)" },
    { name: "PEM certificate", text: `-----BEGIN CERTIFICATE-----\n${certificateBody.match(/.{1,64}/g)!.join("\n")}\n-----END CERTIFICATE-----` },
    { name: "SSH public key", text: `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${random(base64Alphabet, 43)} ada@laptop` },
    { name: "base64 of plain text", text: Buffer.from("The quick brown fox jumps over the lazy dog, twice over.").toString("base64") },
    { name: "kebab-case word starting with sk-", text: "npm run task-sketch-generator --mask-output" },
    { name: "model and call IDs", text: `{"id":"chatcmpl-${random(alnum, 29)}","call":"toolu_01${random(alnum, 22)}"}` },
  ];
})();
