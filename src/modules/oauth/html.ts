// The provider's HTML: the login page and error pages. No JavaScript, every value escaped.

export const PRODUCT_NAME = 'flowgate';

export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"'`=]/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE = `
*{box-sizing:border-box}
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1d2330;line-height:1.5}
main{max-width:26rem;margin:4rem auto;padding:2rem;background:#fff;border-radius:8px;box-shadow:0 1px 4px rgba(0,0,0,.12)}
h1{font-size:1.4rem;margin:0 0 .25rem}
p.sub{margin:0 0 1.5rem;color:#4b5565}
label{display:block;font-weight:600;margin:1rem 0 .25rem}
input[type=email],input[type=password]{width:100%;padding:.6rem .7rem;font-size:1rem;border:1px solid #8a93a3;border-radius:4px}
input:focus,button:focus{outline:3px solid #7aa7ff;outline-offset:1px}
button{margin-top:1.5rem;width:100%;padding:.7rem;font-size:1rem;font-weight:600;color:#fff;background:#1f5bd8;border:0;border-radius:4px;cursor:pointer}
.error{margin:0 0 1rem;padding:.75rem;border-left:4px solid #c62828;background:#fdecea;color:#7f1d1d}
.note{margin-top:1.5rem;font-size:.9rem;color:#4b5565}
`;

export function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)} · ${PRODUCT_NAME}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

export interface LoginPageInput {
  action: string;
  csrfToken: string;
  clientName: string;
  email?: string;
  error?: string;
  /** Shown when known (after a failed attempt for a disabled account, or an existing session). */
  companyName?: string | null;
}

export function loginPage(p: LoginPageInput): string {
  const heading = p.companyName ? `Sign in to ${p.companyName}` : `Sign in to ${PRODUCT_NAME}`;
  return page('Sign in', `<h1>${escapeHtml(heading)}</h1>
<p class="sub">to continue to <strong>${escapeHtml(p.clientName)}</strong></p>
${p.error ? `<p class="error" role="alert" id="login-error">${escapeHtml(p.error)}</p>` : ''}
<form method="post" action="${escapeHtml(p.action)}" autocomplete="on" novalidate>
<input type="hidden" name="csrf" value="${escapeHtml(p.csrfToken)}">
<label for="email">E-mail</label>
<input id="email" name="email" type="email" autocomplete="username" required autofocus value="${escapeHtml(p.email ?? '')}"${p.error ? ' aria-describedby="login-error" aria-invalid="true"' : ''}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${p.error ? ' aria-describedby="login-error" aria-invalid="true"' : ''}>
<button type="submit">Sign in</button>
</form>
<p class="note">${escapeHtml(PRODUCT_NAME)} signs you in for this application. Your password is never shared with it.</p>`);
}

export function messagePage(title: string, message: string, detail?: string): string {
  return page(title, `<h1>${escapeHtml(title)}</h1>
<p class="error" role="alert">${escapeHtml(message)}</p>
${detail ? `<p class="note">${escapeHtml(detail)}</p>` : ''}`);
}
