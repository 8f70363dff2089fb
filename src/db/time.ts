// Timestamps are stored as ISO 8601 UTC text with milliseconds on both engines: it sorts
// correctly as text and needs no per-engine conversion.
export function nowIso(): string {
  return new Date().toISOString();
}
export function addDays(iso: string, days: number): string {
  return new Date(Date.parse(iso) + days * 86_400_000).toISOString();
}
export function addSeconds(iso: string, seconds: number): string {
  return new Date(Date.parse(iso) + seconds * 1000).toISOString();
}
