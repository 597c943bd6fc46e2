import { Component } from 'react';
import type { ReactNode } from 'react';
import { t } from './i18n.ts';
import { Link } from './router.tsx';
import { Page } from './ui.tsx';

interface Props {
  /** The screen's address: a new one (the user went elsewhere) clears the error. */
  resetKey: string;
  /** Before the screen renders again on "Try again": what would make it fail the same way is dropped. */
  onRetry: () => void;
  children: ReactNode;
}

/**
 * One screen's failure stays that screen's: a render error (or a screen's code that cannot load)
 * shows a message with a retry and a way to the map, under the header and navigation, which keep working.
 */
export class ScreenBoundary extends Component<Props, { error: unknown; key: string }> {
  override state = { error: undefined as unknown, key: this.props.resetKey };

  static getDerivedStateFromError(error: unknown) {
    return { error };
  }

  static getDerivedStateFromProps(props: Props, state: { error: unknown; key: string }) {
    return props.resetKey === state.key ? null : { error: undefined, key: props.resetKey };
  }

  private retry = () => {
    this.props.onRetry();
    this.setState({ error: undefined });
  };

  override render() {
    if (this.state.error === undefined) return this.props.children;
    return (
      <Page title={t.screenError.title}>
        <div className="note error" role="alert">
          <span>{t.screenError.body}</span>
        </div>
        <div className="row">
          <button type="button" className="primary" onClick={this.retry}>
            {t.retry}
          </button>
          <Link to="/">{t.screenError.home}</Link>
        </div>
      </Page>
    );
  }
}
