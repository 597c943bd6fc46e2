import { useQuery } from '@tanstack/react-query';
import type { User } from '../../../src/client/index.ts';
import { api } from '../api.ts';
import { dateTime, t } from '../i18n.ts';
import { ErrorNote, Loading, Page } from '../ui.tsx';
import { queryKeys } from '../queryKeys.ts';

const COUNTED = ['devices', 'geofences', 'shares', 'notificationRules'] as const;

const max = (limit: number | null) => (limit === null ? t.plan.unlimited : String(limit));

function usageText(used: number | null, limit: number | null): string {
  if (used === null) return t.plan.unknown(max(limit));
  return limit === null ? t.plan.usageUnlimited(used) : t.plan.usageOf(used, limit);
}

/** The plan in force, what the user holds against each limit, and their subscriptions: where every 402 leads. */
export default function PlanScreen({ user }: { user: User }) {
  const subscriptions = useQuery({ queryKey: queryKeys.subscriptions(user.id), queryFn: () => api.subscriptions(user.id) });
  if (subscriptions.isPending) return <Page title={t.plan.title}><Loading /></Page>;
  if (subscriptions.isError) {
    return (
      <Page title={t.plan.title}>
        <ErrorNote error={subscriptions.error} onRetry={() => void subscriptions.refetch()} />
      </Page>
    );
  }
  const { plan, usage } = subscriptions.data;
  return (
    <Page title={t.plan.title}>
      <p>{t.plan.current(plan.name)}</p>
      <section className="card" aria-labelledby="plan-usage">
        <h2 id="plan-usage">{t.plan.usage}</h2>
        <dl className="facts">
          {COUNTED.map((name) => (
            <div key={name} className="fact-row">
              <dt>{t.plan.limits[name]}</dt>
              <dd>{usageText(usage[name], plan.limits[name])}</dd>
            </div>
          ))}
          <div className="fact-row">
            <dt>{t.plan.limits.historyDays}</dt>
            <dd>{max(plan.limits.historyDays)}</dd>
          </div>
        </dl>
      </section>
      <section className="card" aria-labelledby="plan-features">
        <h2 id="plan-features">{t.plan.features}</h2>
        <dl className="facts">
          <dt>{t.plan.commandsIncluded}</dt>
          <dd>{plan.features.commands ? t.plan.included : t.plan.notIncluded}</dd>
          <dt>{t.plan.channels}</dt>
          <dd>{plan.features.channels === null ? t.plan.allChannels : plan.features.channels.join(', ') || t.none}</dd>
        </dl>
      </section>
      <section className="card" aria-labelledby="plan-subscriptions">
        <h2 id="plan-subscriptions">{t.plan.subscriptions}</h2>
        {subscriptions.data.subscriptions.length === 0 ? (
          <p>{t.plan.noSubscriptions}</p>
        ) : (
          <ul className="plain">
            {subscriptions.data.subscriptions.map((item) => (
              <li key={item.id}>
                {t.plan.subscription(item.plan_name ?? item.plan_id, t.plan.statuses[item.status] ?? item.status)}
                {item.current_period_end && <small> · {t.plan.until(dateTime(item.current_period_end))}</small>}
              </li>
            ))}
          </ul>
        )}
      </section>
    </Page>
  );
}
