// Modules declare which of their columns hold keyring ciphertexts, so that key rotation and
// key status can cover every stored secret without knowing the modules that own them.
// Registration normally happens at module load (import time).

export interface SecretColumn {
  table: string;
  /** A unique column identifying the row (used for batching and compare-and-set updates). */
  idColumn: string;
  /** The column holding the ciphertext (`fg1:…`). NULL and empty values are skipped. */
  column: string;
  /** AAD for this row, from the selected row's columns */
  aad(row: Record<string, unknown>): string;
  /** columns needed by aad() */
  aadColumns: string[];
  /** Only rows whose `column` value starts with `prefix` hold secrets (e.g. settings `secret:*`). */
  where?: { column: string; prefix: string };
}

const registry = new Map<string, SecretColumn>();

function keyOf(table: string, column: string): string {
  return `${table}\u0000${column}`;
}

/** Registers (or replaces) the secret column `c.table`.`c.column`. */
export function registerSecretColumn(c: SecretColumn): void {
  for (const name of [c.table, c.idColumn, c.column, ...c.aadColumns, ...(c.where ? [c.where.column] : [])]) {
    if (typeof name !== 'string' || name.length === 0) {
      throw new Error(`registerSecretColumn: invalid table or column name in ${c.table}.${c.column}`);
    }
  }
  registry.set(keyOf(c.table, c.column), Object.freeze({ ...c, aadColumns: [...c.aadColumns] }));
}

/** Removes a registration (mostly for tests that register scratch tables). */
export function unregisterSecretColumn(table: string, column: string): boolean {
  return registry.delete(keyOf(table, column));
}

export function secretColumns(): readonly SecretColumn[] {
  return [...registry.values()];
}
