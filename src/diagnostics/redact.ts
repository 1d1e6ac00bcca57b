/**
 * Credential shapes that may appear in text we did not write (an error
 * message echoing a header, say): Cosmos DB master-key, AAD and resource
 * token signatures, raw or URL-encoded, and bearer tokens.
 */
// `%(25)*3D` is "=" URL-encoded any number of times: a signature encoded twice reads `sig%253D`.
const credentialPatterns: readonly RegExp[] = [
  /type(=|%(25)*3D)(master|aad|resource)(&|%(25)*26)\S*/gi,
  /\bsig(=|%(25)*3D)[^\s&"']*/gi,
  /\bbearer(\s|%(25)*20|\+)+[\w\-.~+/%]+=*/gi,
  /\bauthorization\s*(:|=|%(25)*3A|%(25)*3D)\s*\S+/gi,
  // A JSON Web Token (an AAD access token) on its own: three base64url parts, the first a JSON header.
  /\beyJ[\w-]+\.[\w-]+\.[\w-]*/g,
];

/** Replaces anything shaped like a credential with `[redacted]`. */
export function redactCredentials(text: string): string {
  return credentialPatterns.reduce((result, pattern) => result.replace(pattern, "[redacted]"), text);
}
