/**
 * Who may talk to `turnlog view`'s server: whoever holds the token it printed. The server listens
 * on the loopback interface only, but every local process and every web page the user opens can
 * reach the loopback interface; the token keeps both out, and the Host check keeps a web page out
 * that a DNS-rebinding attack points at 127.0.0.1. A request that changes the log (an answer to a
 * held call) must also carry the server's CSRF token in a header and come from the view's own
 * origin (docs/security.md, "turnlog view's answers").
 */

/**
 * Whether a request's `Host` header names this server: `127.0.0.1:<port>` or `localhost:<port>`,
 * nothing else. A page on another origin that a DNS-rebinding attack resolves to 127.0.0.1 sends
 * its own host name, and is refused.
 *
 * @example
 * allowedHost("127.0.0.1:5173", 5173); // true
 * allowedHost("evil.example:5173", 5173); // false
 */
export function allowedHost(host: string | undefined, port: number): boolean {
  if (host === undefined) return false;
  const value = host.toLowerCase();
  return value === `127.0.0.1:${port}` || value === `localhost:${port}`;
}

/**
 * Whether a state-changing request's `Origin` header is exactly the view's own origin: the origin
 * of the page the browser shows, `http://` and the request's own (already allowed) Host. A browser
 * sends `Origin` with every POST; a request without one, or from any other origin (another site,
 * another port, `null` from a sandboxed frame or a file), is refused.
 *
 * @example
 * allowedOrigin("http://127.0.0.1:5173", "127.0.0.1:5173"); // true
 * allowedOrigin("http://evil.example", "127.0.0.1:5173"); // false
 */
export function allowedOrigin(origin: string | undefined, host: string | undefined): boolean {
  if (origin === undefined || host === undefined) return false;
  return origin.toLowerCase() === `http://${host.toLowerCase()}`;
}

/** The header a state-changing request carries the CSRF token in (a custom header: no form and no simple cross-origin request can set it). */
export const csrfHeader = "x-turnlog-csrf";

/**
 * The cookie the token is kept in after the first visit. Cookies are scoped by host, not port, so
 * the name carries the port: two views on two ports keep a cookie each.
 *
 * @example
 * viewCookieName(41733); // "turnlog_view_41733"
 */
export function viewCookieName(port: number): string {
  return `turnlog_view_${port}`;
}

/**
 * The `Set-Cookie` value that keeps `token`: HttpOnly (no script reads it) and SameSite=Strict (no
 * other site sends it). No `Secure`: the server speaks plain HTTP on the loopback interface.
 *
 * @example
 * response.setHeader("Set-Cookie", viewCookie(port, token));
 */
export function viewCookie(port: number, token: string): string {
  return `${viewCookieName(port)}=${token}; Path=/; HttpOnly; SameSite=Strict`;
}

/**
 * The value of cookie `name` in a `Cookie` header, or undefined.
 *
 * @example
 * cookieValue("a=1; turnlog_view_41733=q3V1", "turnlog_view_41733"); // "q3V1"
 */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(";")) {
    const separator = part.indexOf("=");
    if (separator < 0) continue;
    if (part.slice(0, separator).trim() === name) return part.slice(separator + 1).trim();
  }
  return undefined;
}

/**
 * Headers on every response: the page may load script, style, images and connections from its own
 * origin only (`script-src 'self'`: no inline script, no event-handler attribute, no `eval`, no
 * remote origin; no plugin), may not be framed, sends no Referer, and a
 * response is never sniffed as another type nor cached. No CORS header is ever sent, so no other
 * origin may read a response.
 */
export const securityHeaders: Readonly<Record<string, string>> = {
  "Content-Security-Policy": "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
  "Cache-Control": "no-store",
};
