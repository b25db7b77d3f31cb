import type { ILine } from '../format/trans';

/** A new element with its class, appended to its parent. */
export function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  parent: HTMLElement
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  parent.appendChild(node);
  return node;
}

/** Set a node's text (and colour level); an empty or null line hides it. */
export function setLine(node: HTMLElement, line: ILine | string | null): void {
  const { text, level } =
    typeof line === 'string' || line === null
      ? { text: line ?? '', level: null }
      : line;
  if (node.textContent !== text) {
    node.textContent = text;
  }
  if (level !== null && node.dataset.level !== level) {
    node.dataset.level = level;
  }
  node.hidden = !text;
}

/** One render per animation frame however many updates ask for it, and none while `shown` says no:
 * a view that updates every sample lays out once a frame, and not at all while hidden. */
export class Frames {
  private _frame = 0;

  constructor(
    private readonly _render: () => void,
    private readonly _shown: () => boolean
  ) {}

  request(): void {
    if (!this._shown() || this._frame) {
      return;
    }
    this._frame = requestAnimationFrame(() => {
      this._frame = 0;
      this._render();
    });
  }

  cancel(): void {
    if (this._frame) {
      cancelAnimationFrame(this._frame);
      this._frame = 0;
    }
  }
}
