/** The login form: a Steward user and password; the session then lives in an HttpOnly cookie. */
import { useState } from "preact/hooks";
import type { SessionInfo } from "../../../../api/browser";
import { logIn } from "../http";
import { ErrorNote } from "../ui";

export function LoginView({ onLogin, notice }: { onLogin: (s: SessionInfo) => void; notice?: string }) {
  const [user, setUser] = useState("");
  const [password, setPassword] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      onLogin(await logIn(user.trim(), password));
    } catch (err) {
      setError(err);
      setPassword("");
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="login-page">
      <form class="card login" onSubmit={(e) => void submit(e)}>
        <h1 class="brand-big">Steward</h1>
        <p class="muted">
          Log in with a Steward user (as with <code>steward login</code>).
        </p>
        {notice ? <p class="notice">{notice}</p> : null}
        <label class="field">
          <span class="field-name">User</span>
          <input
            name="user"
            autocomplete="username"
            value={user}
            onInput={(e) => setUser((e.target as HTMLInputElement).value)}
            required
          />
        </label>
        <label class="field">
          <span class="field-name">Password</span>
          <input
            name="password"
            type="password"
            autocomplete="current-password"
            value={password}
            onInput={(e) => setPassword((e.target as HTMLInputElement).value)}
            required
          />
        </label>
        <button class="btn btn-primary" type="submit" disabled={busy}>
          {busy ? "Logging in…" : "Log in"}
        </button>
        <ErrorNote error={error} />
      </form>
    </div>
  );
}
