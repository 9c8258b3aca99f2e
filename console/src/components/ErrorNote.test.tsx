import { render, screen } from '@testing-library/react';
import { ApiError } from '../api/http';
import type { ApiErrorBody } from '../api/types';
import { credentialOf, signIn } from '../lib/credential';
import recorded from '../test/recorded/auth.json';
import { makeToken } from '../test/tokens';
import { ErrorNote } from './ErrorNote';

// The refusals were recorded from a real cluster (scripts/record-payloads.mjs, RECORD_ONLY=auth).
const unauthenticatedBody = recorded.removeAnonymous.body as ApiErrorBody;
const deniedBody = recorded.removeAsWriter.body as ApiErrorBody;
const writer = credentialOf(makeToken('writer', 'write'));

describe('ErrorNote for refusals', () => {
  it('shows a 401 of an anonymous request as the API gave it, with a hint to sign in', () => {
    render(<ErrorNote error={new ApiError(401, unauthenticatedBody, '')} action="The change" />);
    const note = screen.getByTestId('api-error');
    expect(note).toHaveAttribute('data-code', 'UNAUTHENTICATED');
    expect(note).toHaveAttribute('data-status', '401');
    expect(note).toHaveTextContent(`The change failed: UNAUTHENTICATEDHTTP 401${unauthenticatedBody.message}`);
    expect(screen.getByTestId('auth-hint')).toHaveTextContent('Sign in (top right) with a token whose role allows this.');
  });

  it('for a 401 of a request that carried a token, says the token was refused', () => {
    const refused = recorded.putRefusedToken.body as ApiErrorBody;
    render(<ErrorNote error={new ApiError(401, refused, '', credentialOf('abc.def.ghi'))} />);
    expect(screen.getByTestId('api-error')).toHaveTextContent(refused.message);
    expect(screen.getByTestId('auth-hint')).toHaveTextContent('The token was refused: sign in again');
  });

  it('judges by who the request ran as, not who is signed in now', () => {
    // Refused while anonymous, then signed in: the hint still says to sign in.
    signIn(makeToken('ops', 'admin'));
    render(<ErrorNote error={new ApiError(401, unauthenticatedBody, '')} />);
    expect(screen.getByTestId('auth-hint')).toHaveTextContent('Sign in (top right)');
  });

  it('shows a 403 with the role of the token sent', () => {
    render(<ErrorNote error={new ApiError(403, deniedBody, '', writer)} action="The change" />);
    const note = screen.getByTestId('api-error');
    expect(note).toHaveAttribute('data-code', 'PERMISSION_DENIED');
    expect(note).toHaveTextContent(`HTTP 403${deniedBody.message}`);
    expect(screen.getByTestId('auth-hint')).toHaveTextContent(
      'The role of the token sent (write, writer) is not enough for this: sign in with a token of a larger role.',
    );
  });

  it('adds no hint to other errors', () => {
    render(<ErrorNote error={new ApiError(404, { code: 'NOT_FOUND', message: 'no such key' }, '')} />);
    expect(screen.getByTestId('api-error')).toHaveTextContent('no such key');
    expect(screen.queryByTestId('auth-hint')).not.toBeInTheDocument();
  });
});
