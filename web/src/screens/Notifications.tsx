import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { FormEvent } from 'react';
import type { Device, NotificationChannel, NotificationRule, NotificationRuleRequest } from '../../../src/client/index.ts';
import { api, errorCode } from '../api.ts';
import { dateTime, t } from '../i18n.ts';
import { browserPushSubscription, disablePush, enablePush, ownPushTarget, PushPermissionDenied, pushSupported, useReceivedPushes } from '../push.ts';
import { Link } from '../router.tsx';
import { ErrorNote, Field, Loading, Note, Page } from '../ui.tsx';
import { queryKeys } from '../queryKeys.ts';

const words = t.notifications;
const channelName = (name: string) => words.channelNames[name] ?? name;
const typeName = (type: string) => t.events.types[type] ?? type;

export default function Notifications() {
  const rules = useQuery({ queryKey: queryKeys.notifications.rules, queryFn: () => api.notificationRules() });
  const devices = useQuery({ queryKey: queryKeys.devices, queryFn: () => api.devices() });
  const [editing, setEditing] = useState<NotificationRule | undefined>();
  // A saved rule starts a fresh form (no second rule by a second click); the secret outlives that form.
  const [saved, setSaved] = useState<{ count: number; secret: string | undefined }>({ count: 0, secret: undefined });
  const names = new Map(devices.data?.map((device) => [device.id, device.name]));
  return (
    <Page title={words.title} wide>
      <p>{words.intro}</p>
      <div className="grid">
        <section className="card" aria-labelledby="rules">
          <h2 id="rules">{words.rules}</h2>
          {rules.isPending && <Loading />}
          <ErrorNote error={rules.error} onRetry={() => void rules.refetch()} />
          {rules.data?.length === 0 && <p>{words.noRules}</p>}
          <ul className="plain">
            {rules.data?.map((rule) => (
              <RuleItem key={rule.id} rule={rule} onEdit={() => setEditing(rule)} />
            ))}
          </ul>
        </section>
        <RuleForm
          key={editing ? `edit-${editing.id}` : `new-${saved.count}`}
          rule={editing}
          devices={devices.data ?? []}
          saved={saved}
          onSaved={(rule) => {
            setEditing(undefined);
            setSaved({ count: saved.count + 1, secret: rule.webhookSecret });
          }}
          onCancel={() => setEditing(undefined)}
        />
        <TestSend />
        <FailedDeliveries names={names} />
        <PushOptIn />
      </div>
    </Page>
  );
}

function RuleItem({ rule, onEdit }: { rule: NotificationRule; onEdit: () => void }) {
  const queryClient = useQueryClient();
  const remove = useMutation({ mutationFn: () => api.deleteNotificationRule(rule.id), onSuccess: () => void queryClient.invalidateQueries({ queryKey: queryKeys.notifications.all }) });
  const name = typeName(rule.type);
  const devices = rule.always ? words.everyDevice : words.deviceCount(rule.deviceIds.length);
  return (
    <li>
      <span>{words.ruleSummary(name, devices, rule.channels.map(channelName).join(', '))}</span>{' '}
      <button type="button" className="link" aria-label={words.editNamed(name)} onClick={onEdit}>
        {t.edit}
      </button>{' '}
      <button type="button" className="link" aria-label={words.deleteNamed(name)} onClick={() => window.confirm(words.confirmDelete) && remove.mutate()}>
        {t.delete}
      </button>
      <ErrorNote error={remove.error} />
    </li>
  );
}

/** Create or edit a rule; the webhook secret the server answers once is shown here, once. */
function RuleForm({ rule, devices, saved, onSaved, onCancel }: {
  rule: NotificationRule | undefined;
  devices: Device[];
  saved: { count: number; secret: string | undefined };
  onSaved: (rule: NotificationRule) => void;
  onCancel: () => void;
}) {
  const queryClient = useQueryClient();
  const types = useQuery({ queryKey: queryKeys.notifications.types, queryFn: () => api.notificationTypes(), staleTime: Infinity });
  const channels = useQuery({ queryKey: queryKeys.notifications.channels, queryFn: () => api.notificationChannels(), staleTime: Infinity });
  const [type, setType] = useState(rule?.type ?? 'alarm');
  const [always, setAlways] = useState(rule?.always ?? true);
  const [deviceIds, setDeviceIds] = useState<number[]>(rule?.deviceIds ?? []);
  const [chosen, setChosen] = useState<string[]>(rule?.channels ?? ['web']);
  const [alarms, setAlarms] = useState(typeof rule?.attributes.alarms === 'string' ? rule.attributes.alarms : '');
  const [webhookUrl, setWebhookUrl] = useState(typeof rule?.attributes.webhookUrl === 'string' ? rule.attributes.webhookUrl : '');
  const save = useMutation({
    mutationFn: (request: NotificationRuleRequest) => (rule ? api.updateNotificationRule(rule.id, request) : api.createNotificationRule(request)),
    onSuccess: (answer) => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.notifications.rules });
      onSaved(answer);
    },
  });
  const eligible = devices.filter((device) => device.isOwner || device.permissions.notifications);
  const toggle = <T,>(list: T[], item: T, on: boolean) => (on ? [...list, item] : list.filter((other) => other !== item));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    // The web channel shows browser notifications: ask now, while the person is choosing it.
    if (chosen.includes('web') && 'Notification' in window && Notification.permission === 'default') void Notification.requestPermission();
    // Attributes the form does not show (set through the API) are kept.
    const attributes: Record<string, unknown> = { ...rule?.attributes };
    delete attributes.alarms;
    delete attributes.webhookUrl;
    if (type === 'alarm' && alarms.trim()) attributes.alarms = alarms.trim();
    if (chosen.includes('webhook')) attributes.webhookUrl = webhookUrl.trim();
    save.mutate({ type, always, deviceIds: always ? undefined : deviceIds, channels: chosen as NotificationChannel[], attributes });
  };
  return (
    <section className="card" aria-labelledby="rule-form">
      <h2 id="rule-form">{rule ? words.editRule : words.newRule}</h2>
      {(types.isPending || channels.isPending) && <Loading />}
      <ErrorNote error={types.error ?? channels.error} />
      <form onSubmit={submit} className="stack">
        <div className="field">
          <label htmlFor="rule-type">{words.event}</label>
          <select id="rule-type" value={type} onChange={(e) => setType(e.target.value)}>
            {(types.data ?? [{ type }]).map((item) => (
              <option key={item.type} value={item.type}>
                {typeName(item.type)}
              </option>
            ))}
          </select>
        </div>
        <fieldset className="stack">
          <legend>{words.devices}</legend>
          <label className="check">
            <input type="checkbox" checked={always} onChange={(e) => setAlways(e.target.checked)} />
            {words.allDevices}
          </label>
          {!always && eligible.length === 0 && <p>{words.noDevices}</p>}
          {!always &&
            eligible.map((device) => (
              <label key={device.id} className="check">
                <input type="checkbox" checked={deviceIds.includes(device.id)} onChange={(e) => setDeviceIds(toggle(deviceIds, device.id, e.target.checked))} />
                {device.name}
              </label>
            ))}
        </fieldset>
        <fieldset className="row wrap">
          <legend>{words.channels}</legend>
          {channels.data?.map(({ name }) => (
            <label key={name} className="check">
              <input type="checkbox" checked={chosen.includes(name)} onChange={(e) => setChosen(toggle(chosen, name, e.target.checked))} />
              {channelName(name)}
            </label>
          ))}
        </fieldset>
        {type === 'alarm' && <Field label={words.alarms} hint={words.alarmsHint} maxLength={512} value={alarms} onChange={(e) => setAlarms(e.target.value)} />}
        {chosen.includes('webhook') && (
          <Field label={words.webhookUrl} hint={words.webhookHint} type="url" required maxLength={2048} value={webhookUrl} onChange={(e) => setWebhookUrl(e.target.value)} />
        )}
        <ErrorNote error={save.error} />
        {!rule && saved.count > 0 && !saved.secret && <Note kind="success">{words.created}</Note>}
        {!rule && saved.secret && (
          <Note kind="success">
            <strong>{words.secretTitle}</strong>
            <code className="secret">{saved.secret}</code>
            <span>{words.secretOnce}</span>
          </Note>
        )}
        <div className="row">
          <button type="submit" className="primary" disabled={save.isPending || chosen.length === 0}>
            {rule ? t.save : words.create}
          </button>
          {rule && (
            <button type="button" onClick={onCancel}>
              {t.cancel}
            </button>
          )}
        </div>
      </form>
    </section>
  );
}

function TestSend() {
  const channels = useQuery({ queryKey: queryKeys.notifications.channels, queryFn: () => api.notificationChannels(), staleTime: Infinity });
  const [channel, setChannel] = useState('');
  const test = useMutation({ mutationFn: () => api.testNotification(channel || undefined) });
  return (
    <section className="card" aria-labelledby="notification-test">
      <h2 id="notification-test">{words.test}</h2>
      <div className="field">
        <label htmlFor="test-channel">{words.testChannel}</label>
        <select id="test-channel" value={channel} onChange={(e) => setChannel(e.target.value)}>
          <option value="">{words.everyChannel}</option>
          {channels.data?.map(({ name }) => (
            <option key={name} value={name}>
              {channelName(name)}
            </option>
          ))}
        </select>
      </div>
      <button type="button" onClick={() => test.mutate()} disabled={test.isPending}>
        {words.testSend}
      </button>
      <ErrorNote error={test.error} />
      {test.data?.length === 0 && <Note>{words.testNothing}</Note>}
      {test.data && test.data.length > 0 && (
        <ul className="plain" aria-live="polite">
          {test.data.map((result, index) => (
            <li key={index}>
              {result.outcome === 'sent'
                ? words.testSent(channelName(result.channel), result.target ?? '')
                : words.testFailed(channelName(result.channel), result.target ?? '', result.error ?? '')}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function FailedDeliveries({ names }: { names: Map<number, string> }) {
  const queryClient = useQueryClient();
  const failed = useQuery({ queryKey: queryKeys.notifications.failedDeliveries, queryFn: () => api.deliveries('failed') });
  const retry = useMutation({ mutationFn: (id: number) => api.retryDelivery(id), onSuccess: () => void queryClient.invalidateQueries({ queryKey: queryKeys.notifications.deliveries }) });
  return (
    <section className="card" aria-labelledby="failed-deliveries">
      <h2 id="failed-deliveries">{words.failed}</h2>
      {failed.isPending && <Loading />}
      <ErrorNote error={failed.error ?? retry.error} onRetry={() => void failed.refetch()} />
      {retry.isSuccess && <Note kind="success">{words.retried}</Note>}
      {failed.data?.length === 0 && <p>{words.noFailed}</p>}
      <ul className="plain">
        {failed.data?.map((delivery) => (
          <li key={delivery.id}>
            {words.failedItem(channelName(delivery.channel), names.get(delivery.deviceId) ?? `#${delivery.deviceId}`, delivery.attempts)}
            <small> · {dateTime(delivery.createdAt)}</small>
            {delivery.lastError && (
              <>
                <br />
                <small>{delivery.lastError}</small>
              </>
            )}{' '}
            <button type="button" onClick={() => retry.mutate(delivery.id)} disabled={retry.isPending}>
              {words.retry}
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}

function PushOptIn() {
  const queryClient = useQueryClient();
  const targets = useQuery({ queryKey: queryKeys.notifications.targets, queryFn: () => api.pushTargets() });
  const subscription = useQuery({ queryKey: queryKeys.pushSubscription, queryFn: browserPushSubscription });
  const received = useReceivedPushes();
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: queryKeys.notifications.targets });
    void queryClient.invalidateQueries({ queryKey: queryKeys.pushSubscription });
  };
  const enable = useMutation({ mutationFn: () => enablePush(words.pushName), onSettled: refresh });
  const disable = useMutation({ mutationFn: disablePush, onSettled: refresh });
  const remove = useMutation({ mutationFn: (id: number) => api.deletePushTarget(id), onSuccess: refresh });
  const own = ownPushTarget();
  // On while this browser is subscribed and its target is still listed: removed from the list, it gets nothing.
  const on = Boolean(subscription.data) && targets.data?.some((target) => target.id === own) === true;
  const failure = enable.error
    ? enable.error instanceof PushPermissionDenied
      ? words.pushDenied
      : errorCode(enable.error) === 'CHANNEL_NOT_AVAILABLE'
        ? words.pushUnavailable
        : errorCode(enable.error)
          ? undefined
          : words.pushFailed
    : undefined;
  return (
    <section className="card" aria-labelledby="push">
      <h2 id="push">{words.push}</h2>
      <p>{words.pushHint}</p>
      {!pushSupported() ? (
        <p>{words.pushUnsupported}</p>
      ) : on ? (
        <>
          <Note kind="success">{words.pushOn}</Note>
          <button type="button" onClick={() => disable.mutate()} disabled={disable.isPending}>
            {words.pushDisable}
          </button>
        </>
      ) : (
        <button type="button" onClick={() => enable.mutate()} disabled={enable.isPending}>
          {words.pushEnable}
        </button>
      )}
      <ErrorNote error={disable.error} />
      {failure ? (
        <div className="note error" role="alert">
          {failure}
        </div>
      ) : (
        <ErrorNote error={enable.error} />
      )}
      <h3>{words.targets}</h3>
      <ErrorNote error={targets.error ?? remove.error} onRetry={() => void targets.refetch()} />
      {targets.data?.length === 0 && <p>{words.noTargets}</p>}
      <ul className="plain">
        {targets.data?.map((target) => (
          <li key={target.id}>
            {target.name ?? channelName(target.kind)} <small>· {target.id === own ? words.thisBrowser : channelName(target.kind)} · {target.hint}</small>{' '}
            <button type="button" className="link" onClick={() => remove.mutate(target.id)}>
              {words.removeTarget(target.name ?? target.hint)}
            </button>
          </li>
        ))}
      </ul>
      {received.length > 0 && (
        <>
          <h3>{words.received}</h3>
          <ul className="plain">
            {received.map((push) => (
              <li key={push.at}>
                <Link to={push.path}>{push.title}</Link> <small>{push.body}</small>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
