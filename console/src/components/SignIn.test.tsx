import { fireEvent, render, screen, within } from '@testing-library/react';
import { storedToken, TOKEN_KEY } from '../lib/credential';
import { makeToken, tokenWith } from '../test/tokens';
import { SignIn } from './SignIn';

function openForm() {
  fireEvent.click(screen.getByTestId('sign-in-button'));
  return screen.getByTestId('sign-in-form');
}

function paste(form: HTMLElement, token: string) {
  fireEvent.change(within(form).getByRole('textbox', { name: 'Token' }), { target: { value: token } });
  fireEvent.click(within(form).getByRole('button', { name: 'Sign in' }));
}

describe('SignIn', () => {
  it('says anonymous when no token is stored', () => {
    render(<SignIn />);
    expect(screen.getByTestId('credential')).toHaveAttribute('data-state', 'anonymous');
    expect(screen.getByTestId('credential')).toHaveTextContent('anonymous');
    expect(screen.queryByTestId('sign-in-form')).not.toBeInTheDocument();
  });

  it('keeps a valid pasted token and shows its sub, role and expiry', () => {
    render(<SignIn />);
    const token = makeToken('ops-alice', 'admin', 2 * 3600);
    paste(openForm(), `${token}\n`);
    expect(storedToken()).toBe(token);
    expect(screen.queryByTestId('sign-in-form')).not.toBeInTheDocument();
    const credential = screen.getByTestId('credential');
    expect(credential).toHaveAttribute('data-state', 'signed-in');
    expect(credential).toHaveAttribute('data-role', 'admin');
    expect(credential).toHaveTextContent('ops-alice');
    expect(screen.getByTestId('credential-role')).toHaveTextContent('admin');
    expect(screen.getByTestId('credential-expiry')).toHaveTextContent(/expires in (1 h 59 min|2 h 0 min)/);
  });

  it('refuses a malformed token with a clear error and keeps nothing', () => {
    render(<SignIn />);
    const form = openForm();
    paste(form, 'this is not a token');
    expect(within(form).getByTestId('sign-in-error')).toHaveTextContent('A token has three parts separated by dots');
    expect(window.localStorage.getItem(TOKEN_KEY)).toBeNull();
    paste(form, tokenWith({ sub: 'x', role: 'superuser', exp: 4102444800 }));
    expect(within(form).getByTestId('sign-in-error')).toHaveTextContent('must be read, write or admin; it is "superuser"');
    expect(screen.getByTestId('credential')).toHaveAttribute('data-state', 'anonymous');
  });

  it('refuses an expired token', () => {
    render(<SignIn />);
    const form = openForm();
    paste(form, makeToken('ops', 'admin', -5));
    expect(within(form).getByTestId('sign-in-error')).toHaveTextContent(/The token expired at .*ask for a new one/);
    expect(storedToken()).toBeNull();
  });

  it('signs out: the token is removed and the header says anonymous again', () => {
    window.localStorage.setItem(TOKEN_KEY, makeToken('ci', 'write'));
    render(<SignIn />);
    expect(screen.getByTestId('credential')).toHaveAttribute('data-role', 'write');
    fireEvent.click(screen.getByTestId('sign-out-button'));
    expect(window.localStorage.getItem(TOKEN_KEY)).toBeNull();
    expect(screen.getByTestId('credential')).toHaveAttribute('data-state', 'anonymous');
  });

  it('marks a stored token that has expired since', () => {
    window.localStorage.setItem(TOKEN_KEY, makeToken('ci', 'admin', -120));
    render(<SignIn />);
    expect(screen.getByTestId('credential')).toHaveAttribute('data-state', 'expired');
    expect(screen.getByTestId('credential-expiry')).toHaveTextContent(/^expired$/);
    expect(screen.getByTestId('credential-role')).toHaveAttribute('title', expect.stringMatching(/^ci, expired \(/) as string);
  });
});
