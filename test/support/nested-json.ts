/**
 * JSON text of `{"a": … {"a": leaf} …}` nested `depth` levels, built as text: JSON.stringify of
 * such a value would overflow the stack a few thousand levels down.
 */
export function nestedJson(depth: number, leaf = '1'): string {
  return `${'{"a":'.repeat(depth)}${leaf}${'}'.repeat(depth)}`;
}
